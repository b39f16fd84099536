"""The options and arguments of the `s2s` commands, declared once (typer `Annotated` types), each
number with its range (how a mistake in them is reported: `seq2seq.cli_app.Commands`).

The command line's vocabulary, kept apart so that `seq2seq.cli` reads as its commands; only
`seq2seq.cli` imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from typer import Argument, Option

from seq2seq.cli_app import between
from seq2seq.config.bounds import (
    MAX_BATCH_TOKENS,
    MAX_BEAM,
    MAX_BODY_BYTES,
    MAX_BOOTSTRAP,
    MAX_LENGTH_PENALTY,
    MAX_PATIENCE,
    MAX_POSITIONS,
    MAX_SAMPLING_TEMPERATURE,
    MAX_SECONDS,
    MAX_SEED,
    MAX_SERVE_CHARS,
    MAX_SERVE_LINES,
    MAX_THREADS,
    MAX_VOCAB,
)

LONGEST = f"no output is longer than {MAX_POSITIONS} tokens"

# Options shared by `translate` and `evaluate`.
Beam = Annotated[
    int | None,
    Option(
        help="Beam size (1 = greedy).", callback=between(1, MAX_BEAM, "each step scores beam x vocabulary")
    ),
]
LengthPenalty = Annotated[
    float | None,
    Option(
        help="Length normalization alpha (decode.length_penalty; 0 = none).",
        callback=between(0.0, MAX_LENGTH_PENALTY, "length ** alpha must stay a finite number"),
    ),
]
Patience = Annotated[
    float | None,
    Option(help="Beam search ends at beam x patience hypotheses.", callback=between(1, MAX_PATIENCE)),
]
LengthNorm = Annotated[
    str | None,
    Option(
        help="Beam scores over length**alpha (power) or ((5+length)/6)**alpha (gnmt) [default: the run's]."
    ),
]
MaxTokens = Annotated[
    int | None,
    Option(help="Source tokens per batch.", callback=between(1, MAX_BATCH_TOKENS, "a batch's memory")),
]
MaxLenA = Annotated[
    float | None,
    Option(
        help="Longest output = A x source tokens + B (decode.max_len_a).",
        callback=between(0.0, float(MAX_POSITIONS), LONGEST),
    ),
]
MaxLenB = Annotated[
    int | None,
    Option(help="See --max-len-a (decode.max_len_b).", callback=between(0, MAX_POSITIONS, LONGEST)),
]
MinLen = Annotated[
    int | None,
    Option(help="Shortest output in tokens (decode.min_len).", callback=between(0, MAX_POSITIONS, LONGEST)),
]
NoRepeatNgram = Annotated[
    int | None,
    Option(
        help="Never repeat an n-gram of this size (decode.no_repeat_ngram).",
        callback=between(0, MAX_POSITIONS, LONGEST),
    ),
]
Sampling = Annotated[bool, Option(help="Draw each token at random instead of searching (back-translation).")]
Temperature = Annotated[
    float,
    Option(
        help="Sampling temperature.",
        callback=between(1e-6, MAX_SAMPLING_TEMPERATURE, "above it every token is about as likely"),
    ),
]
TopK = Annotated[
    int,
    Option(
        help="Sample among the k most likely tokens (0 = all).",
        callback=between(0, MAX_VOCAB, "no vocabulary is larger"),
    ),
]
TopP = Annotated[
    float, Option(help="Sample among the smallest set of tokens with mass p.", callback=between(1e-6, 1.0))
]
Seed = Annotated[
    int | None, Option(help="Seed for --sampling (same seed, same output).", callback=between(0, MAX_SEED))
]
Quantize = Annotated[
    str | None, Option(help="int8: dynamic int8 linear layers on the CPU (faster, -0.1 BLEU).")
]
Precision = Annotated[
    str,
    Option(help="auto (bf16 on GPUs; on a CPU where its features make bf16 faster), fp32, bf16, fp16 (GPU)."),
]
CheckpointName = Annotated[
    list[str] | None,
    Option(help="best, last, a name in checkpoints/, or a path; repeat for an ensemble [default: best]."),
]
DecodeDevice = Annotated[str, Option(help="auto, cpu, cuda or cuda:N.")]
Verbose = Annotated[bool, Option("--verbose", "-v", help="Log progress details.")]
Restart = Annotated[
    bool, Option(help="Begin OUTPUT again instead of continuing the OUTPUT.partial an interrupted run left.")
]
RunDirArg = Annotated[Path, Argument(help="Run directory made by `s2s train`.")]

# `s2s translate`
Tag = Annotated[
    str, Option(help="Start every source with this control token, e.g. <bt> (tokenizer.control_tokens).")
]
To = Annotated[
    str,
    Option(
        "--to",
        help="A multilingual run: the language to translate into (a code it was trained with, e.g. fr).",
    ),
]
Pivot = Annotated[
    str,
    Option(
        "--pivot",
        help="A multilingual run: translate into this language first (e.g. en), then from it into --to "
        "(for a direction it never trained).",
    ),
]
Alignments = Annotated[
    bool,
    Option(
        "--alignments",
        help="Follow each translation with its word alignment after a tab: Pharaoh i-j pairs, source word "
        "i to target word j, words being the whitespace-separated tokens, counted from 0.",
    ),
]
Markup = Annotated[
    str | None,
    Option(
        "--markup",
        help="html or xml: lines carry inline tags, translated without them and put back around the "
        "words aligned to those they wrapped; a line whose markup is malformed is an error.",
    ),
]
Prefix = Annotated[
    Path | None,
    Option(
        "--prefix",
        help="Target prefixes, one line for each input line (empty: none): each translation starts "
        "with its line and goes on from it.",
    ),
]
Input = Annotated[Path | None, Option("-i", "--input", help="Source text (default: stdin).")]
Output = Annotated[Path | None, Option("-o", "--output", help="Translations (default: stdout).")]
NBest = Annotated[
    int,
    Option(
        help="Hypotheses per line, tab-separated, each with its score.",
        callback=between(1, MAX_BEAM, "the beam is at least as wide"),
    ),
]
Scores = Annotated[bool, Option(help="Append each hypothesis' score after a tab.")]
KeepUnk = Annotated[bool, Option(help="Show <unk> pieces in the output as ' ⁇ ' instead of dropping them.")]
Engine = Annotated[
    str,
    Option(
        help="auto (CTranslate2 on a CPU where it runs everything asked, its export made on first use "
        "into the cache: `s2s cache`; else s2s), s2s (s2s's own decoder) or ctranslate2. RUN_DIR may "
        "also be a directory made by `s2s export`."
    ),
]

# `s2s export`
ExportDir = Annotated[Path, Argument(help="New (or empty) directory for the exported model.")]
ExportTo = Annotated[str, Option(help="The format to export to: ctranslate2 or huggingface.")]
ExportCheckpoint = Annotated[str, Option(help="best, last, a name in checkpoints/, or a path.")]
ExportQuantize = Annotated[
    str | None,
    Option(help="ctranslate2: store the weights as int8, int8_float32, int16, float16 or bfloat16."),
]
FullRangeInt8 = Annotated[
    bool,
    Option(
        "--full-range-int8",
        help="int8 weights in 8 bits, not 7: only for CPUs with AVX-512 VNNI or AMX, ARM or a GPU "
        "(on an AVX2-only CPU, full-range int8 products overflow).",
    ),
]
Shortlist = Annotated[
    int,
    Option(
        help="ctranslate2: a lexical shortlist of this many target pieces per source piece, counted "
        "from the run's training pairs; CTranslate2 then scores only a batch's candidates (0: none).",
        callback=between(0, MAX_VOCAB, "no vocabulary is larger"),
    ),
]
ShortlistCommon = Annotated[
    int,
    Option(
        help="With --shortlist: the most frequent target pieces, always scored.",
        callback=between(0, MAX_VOCAB, "no vocabulary is larger"),
    ),
]

# `s2s evaluate`
EvalRunDir = Annotated[
    Path | None,
    Argument(help="Run directory: translate --src with it; with --hyp, only adds its learning curves."),
]
Hyps = Annotated[
    list[Path] | None,
    Option(help="Hypotheses to score; repeat to compare systems (the first is the baseline)."),
]
Refs = Annotated[list[Path] | None, Option(help="References, aligned by line; repeat for more.")]
Src = Annotated[
    Path | None, Option(help="Source text: translated with RUN_DIR; with --hyp, shown in the report.")
]
Out = Annotated[Path | None, Option(help="Translations of --src [default: RUN_DIR/SRC.CHECKPOINT.hyp].")]
JsonFile = Annotated[
    Path | None, Option("--json", help="Write scores, signatures, checksums and settings here.")
]
ReportDir = Annotated[
    Path | None, Option(help="Write a self-contained HTML report to DIR/index.html (needs matplotlib).")
]
Tokenize = Annotated[str, Option(help="BLEU tokenizer: 13a, intl, char, zh, spm, flores200, none...")]
Lowercase = Annotated[bool, Option(help="Case-insensitive BLEU and chrF (TER always is, as in sacrebleu).")]
ChrfPlus = Annotated[bool, Option("--chrf-plus", help="Score chrF++ (with word bigrams) instead of chrF.")]
Bootstrap = Annotated[
    int,
    Option(
        help="Paired bootstrap resamples when comparing systems.",
        callback=between(1, MAX_BOOTSTRAP, "sacrebleu holds resamples x lines in memory"),
    ),
]
Augment = Annotated[
    str | None, Option(help="Also score --src modified: upper,title,typos,nopunct (comma-separated).")
]
AugmentSeed = Annotated[int, Option("--seed", help="Seed of --augment.", callback=between(0, MAX_SEED))]
Task = Annotated[
    str | None,
    Option(
        help="translate (BLEU, chrF, TER), classify (accuracy, macro-F1) or tag (token accuracy, "
        "span F1) [default: RUN_DIR's model.task, else translate]."
    ),
]

# `s2s prepare`
Workers = Annotated[
    int, Option(help="Encoding processes (0 = one per CPU core).", callback=between(0, MAX_THREADS))
]

# `s2s serve`
Host = Annotated[str, Option(help="Address to listen on (0.0.0.0: every interface).")]
Port = Annotated[int, Option(help="Port (0: a free one, named in the log).", callback=between(0, 65535))]
Threads = Annotated[
    int,
    Option(
        help="CPU threads for torch and CTranslate2 (0 = one per core).", callback=between(0, MAX_THREADS)
    ),
]
BatchWindow = Annotated[
    float,
    Option(
        help="--batching static: decode once no request came for this long (10 such windows at most).",
        callback=between(0.0, MAX_SECONDS * 1000, "a time in milliseconds"),
    ),
]
Batching = Annotated[
    str,
    Option(
        help="continuous (requests join the running decode at its next step), static (requests that "
        "arrive together decode together), or auto: continuous where the run allows (an s2s "
        "encoder-decoder translation run), else static."
    ),
]
MaxLines = Annotated[int, Option(help="Lines per request.", callback=between(1, MAX_SERVE_LINES))]
MaxChars = Annotated[int, Option(help="Characters per line.", callback=between(1, MAX_SERVE_CHARS))]
MaxBodyBytes = Annotated[
    int, Option(help="Bytes per request body.", callback=between(1, MAX_BODY_BYTES, "held in memory whole"))
]
MaxBeam = Annotated[
    int, Option(help="Largest beam or n-best a request may ask for.", callback=between(1, MAX_BEAM))
]
Timeout = Annotated[
    float,
    Option(
        help="Seconds a request may wait and decode before it gets 408.",
        callback=between(0.001, MAX_SECONDS, "a day at most"),
    ),
]
CorsOrigins = Annotated[
    list[str] | None,
    Option(help="Let pages from this origin call the API (repeat; * = any) [default: none]."),
]
LogRequests = Annotated[bool, Option("--verbose", "-v", help="Log every request.")]

# `s2s score`
ScoreSrc = Annotated[Path, Option("--src", help="Source lines (plain or .gz/.xz/.bz2/.zst).")]
ScoreTgt = Annotated[Path | None, Option("--tgt", help="Target lines, aligned with --src.")]
ScoreNBest = Annotated[
    Path | None, Option("--nbest", help="`s2s translate --nbest` output for --src: re-rank each line's list.")
]
Reverse = Annotated[
    Path | None,
    Option(
        help="A run of the reverse direction: print the dual conditional cross-entropy (lower = cleaner)."
    ),
]
TokenScores = Annotated[
    bool, Option("--tokens", help="Append each target piece's log-probability (and </s>).")
]
ReverseTo = Annotated[
    str,
    Option(
        "--reverse-to",
        help="A multilingual --reverse run: the language it translates into (that of --src, e.g. de).",
    ),
]
