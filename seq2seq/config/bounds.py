"""The largest numbers s2s accepts, each named once with what a larger one would imply.

The config's rules (each section's `problems`), the command line's options and the scripts' options
all read these, so a number means the same wherever it is given. Besides these, every integer of the
config fits a C int and every float is finite (`seq2seq.config.loading`); a value is checked for
what it implies when the config or the options are read, before anything runs. A range check
written `not low <= value <= high` refuses NaN too (every comparison with NaN is false).
"""

from __future__ import annotations

MAX_VOCAB = 1_000_000  # tokenizer.vocab_size: SentencePiece's limit; --top-k and --shortlist name pieces
MAX_POSITIONS = 65_536  # model.max_positions: no output of any run is longer, so no length limit needs more
MAX_BEAM = 256  # hypotheses kept per sentence: each step scores beam x vocabulary, for no better output
MAX_BATCH_TOKENS = 1 << 20  # tokens per batch: its logits alone (x vocabulary) hold no machine's memory
MAX_PATIENCE = 16.0  # beam x patience finished hypotheses: beyond this a search runs to its length limit
MAX_LENGTH_PENALTY = 10.0  # alpha: length ** alpha must stay a finite number for the longest output
MAX_THREADS = 1024  # CPU threads or processes a command starts
MAX_LAYERS = 1024  # encoder or decoder layers
MAX_PARAMETERS = 10**11  # 1.6 TB of fp32 weights, gradients and AdamW moments: no machine's memory
MAX_CORPUS_WEIGHT = 10_000.0  # a corpus's pairs drawn this many times an epoch at most
MAX_EPOCH_PAIRS = 1 << 30  # pairs drawn an epoch: their indices alone take 8 GiB
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0  # data.temperature: share ** (1/T) underflows below
MAX_SAMPLING_TEMPERATURE = 100.0  # --temperature: above it every token is about as likely as another
MAX_SEED = 2**31 - 1  # seeds every library takes (numpy, torch, random)
MAX_SECONDS = 86_400.0  # a time limit: a day is more than any wait of s2s's needs
MAX_SERVE_LINES = 100_000  # lines of one request, decoded together
MAX_SERVE_CHARS = 1_000_000  # characters of one line of a request
MAX_BODY_BYTES = 1 << 30  # a request's body, held in memory whole
SAMPLE_KEEP = 100  # dropped pairs kept per cleaning rule and corpus, for `s2s prepare --sample`
MAX_BOOTSTRAP = 10_000  # paired bootstrap resamples: sacrebleu holds resamples x lines x statistics at once
