"""What each command is asked: the jobs `seq2seq.commands` does, as plain values.

Each field is an option of its command (`seq2seq.flags`): the command line is made from these
(`seq2seq.cli.expansion`) and `s2s pipeline` writes its command lines from them (`flags.argv`).
Nothing here loads torch, a tokenizer or a metric, so `s2s --help` starts as fast as Python does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.config.bounds import MAX_BEAM, MAX_BOOTSTRAP, MAX_LENGTH_PENALTY, MAX_SEED, MAX_VOCAB
from seq2seq.config.decode import DecodeChoice
from seq2seq.evaluation.evaluate_files import EvaluateFiles
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.flags import REQUIRED, argument, group, option
from seq2seq.run.layout import RUN_DIR
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate.annotations import Annotations
from seq2seq.translate.direction import STRAIGHT, Direction
from seq2seq.translate.options import BATCH_ONLY, RUN_DEFAULTS, SEARCH_ONLY, DecodeOverrides
from seq2seq.translate.placement import AUTO, ENGINE, Placement

FORMATS = ("ctranslate2", "huggingface")  # what `s2s export --format` writes


@dataclass(frozen=True)
class TranslateJob:
    """What `s2s translate` was asked, besides where its lines come from and go."""

    run_dir: Path = RUN_DIR()  # or a CTranslate2 export of one
    asked: DecodeOverrides = group(RUN_DEFAULTS)
    placement: Placement = group(AUTO, omit=("threads",))
    engine: str = ENGINE()  # `seq2seq.commands.engines` chooses
    scores: bool = option(False, "Append each hypothesis' score after a tab.")  # always with an n-best
    keep_unk: bool = option(False, "Show <unk> pieces in the output as ' ⁇ ' instead of dropping them.")
    direction: Direction = group(STRAIGHT)
    prefix: Path | None = option(  # a file of target prefixes, one per input line
        None,
        "Target prefixes, one line for each input line (empty: none): each translation starts with its "
        "line and goes on from it.",
        "--prefix",
    )
    restart: bool = option(  # begin again an output that an interrupted command was building
        False, "Begin OUTPUT again instead of continuing the OUTPUT.partial an interrupted run left."
    )
    annotations: Annotations = group(Annotations())  # word alignments, inline markup
    format: str | None = option(  # a name of `seq2seq.markup.formats.FORMATS`; None: lines
        None,
        "html, xml, markdown or text: INPUT is one document, translated block by block (paragraphs, "
        "headings, list items, cells) and sentence by sentence, and written whole with all that is not "
        "its text (markup, code, link targets, spacing) as it was.",
        "--format",
    )
    sentences: bool = option(  # line mode: each line's sentences translated one by one
        False,
        "Split each line into sentences, translate them one by one and join them again with the spacing "
        "between them: still one line out per line in (--format always splits).",
        "--sentences",
    )
    src_lang: str = option(  # the language whose rules split sentences
        "",
        "The source's language, an ISO 639 code such as de, whose rules split sentences (--format, "
        "--sentences); default: the run's data.src_lang, else rules of no one language.",
        "--src-lang",
    )

    @property
    def with_scores(self) -> bool:
        return self.scores or self.asked.nbest > 1


@dataclass(frozen=True)
class Streams:
    """Where `s2s translate`'s lines come from and go: files, or stdin and stdout."""

    input: Path | None = option(None, "Source text (default: stdin).", "-i", "--input")
    output: Path | None = option(None, "Translations (default: stdout).", "-o", "--output")


@dataclass(frozen=True)
class EvaluateJob:
    """What `s2s evaluate` was asked: its files, how to score, and how RUN_DIR translates --src."""

    files: EvaluateFiles = group(EvaluateFiles())
    metrics: MetricOptions = group(MetricOptions())
    bootstrap: int = option(
        1000,
        "Paired bootstrap resamples when comparing systems.",
        between=(1, MAX_BOOTSTRAP),
        why="sacrebleu holds resamples x lines in memory",
    )
    augment: str | None = option(
        None, "Also score --src modified: upper,title,typos,nopunct (comma-separated)."
    )
    seed: int = option(1, "Seed of --augment.", between=(0, MAX_SEED))
    task: str | None = option(
        None,
        "translate (BLEU, chrF, TER), classify (accuracy, macro-F1) or tag (token accuracy, span F1) "
        "[default: RUN_DIR's model.task, else translate].",
    )
    asked: DecodeOverrides = group(RUN_DEFAULTS, omit=SEARCH_ONLY)
    placement: Placement = group(AUTO, omit=("threads",))
    engine: str = ENGINE()
    direction: Direction = group(STRAIGHT)


@dataclass(frozen=True)
class ScoreJob:
    """What `s2s score` was asked, besides where its lines go."""

    run_dir: Path = RUN_DIR()
    src: Path = option(REQUIRED, "Source lines (plain or .gz/.xz/.bz2/.zst).")
    tgt: Path | None = option(None, "Target lines, aligned with --src.")  # the targets to score
    nbest: Path | None = option(  # or n-best lines for `src`, to re-rank
        None, "`s2s translate --nbest` output for --src: re-rank each line's list."
    )
    reverse: Path | None = option(  # a run of the reverse direction: the dual cross-entropy
        None, "A run of the reverse direction: print the dual conditional cross-entropy (lower = cleaner)."
    )
    tokens: bool = option(False, "Append each target piece's log-probability (and </s>).", "--tokens")
    direction: Direction = group(STRAIGHT, omit=("pivot",))
    reverse_to: str = option(  # a multilingual reverse run's target language (the language of `src`)
        "", "A multilingual --reverse run: the language it translates into (that of --src, e.g. de)."
    )
    asked: DecodeOverrides = group(RUN_DEFAULTS, only=BATCH_ONLY)  # the batch budget, the weights
    placement: Placement = group(AUTO, only=("device", "precision"))
    output: Path | None = option(None, "The scores (default: stdout).", "-o", "--output")


@dataclass(frozen=True)
class AverageJob:
    """Which checkpoints of which run `s2s average` averages, and where the result goes."""

    run_dir: Path = RUN_DIR()
    last: int | None = option(
        None, "How many of the latest numbered checkpoints to average [default: all kept].", between=(1, None)
    )
    output: str = option("averaged", "Name in checkpoints/ (or a path) for the result.")


@dataclass(frozen=True)
class ExportJob:
    """What `s2s export` was asked, besides the run and the directory to export into."""

    run_dir: Path = RUN_DIR()
    out_dir: Path = argument("New (or empty) directory for the exported model.")
    format: str = option("ctranslate2", "The format to export to: ctranslate2 or huggingface.")
    checkpoint: str = option("best", "best, last, a name in checkpoints/, or a path.")
    quantize: str | None = option(  # ctranslate2: a compute type to store the weights in
        None, "ctranslate2: store the weights as int8, int8_float32, int16, float16 or bfloat16."
    )
    full_range_int8: bool = option(  # int8 weights in 8 bits, not 7 (CPUs with VNNI or AMX, GPUs)
        False,
        "int8 weights in 8 bits, not 7: only for CPUs with AVX-512 VNNI or AMX, ARM or a GPU (on an "
        "AVX2-only CPU, full-range int8 products overflow).",
        "--full-range-int8",
    )
    shortlist: int = option(  # target pieces per source piece in a lexical shortlist; 0: none
        0,
        "ctranslate2: a lexical shortlist of this many target pieces per source piece, counted from the "
        "run's training pairs; CTranslate2 then scores only a batch's candidates (0: none).",
        between=(0, MAX_VOCAB),
        why="no vocabulary is larger",
    )
    shortlist_common: int = option(  # with a shortlist: the most frequent target pieces, always scored
        100,
        "With --shortlist: the most frequent target pieces, always scored.",
        between=(0, MAX_VOCAB),
        why="no vocabulary is larger",
    )
    beam: int | None = option(  # the export's decode.beam (a beam chosen on val, say)
        None,
        "The export's default beam size, in place of the run's decode.beam (translate --beam still "
        "overrides it).",
        between=(1, MAX_BEAM),
        why="each step scores beam x vocabulary",
    )
    length_penalty: float | None = option(  # the export's decode.length_penalty
        None,
        "The export's default length penalty, in place of the run's decode.length_penalty.",
        between=(0.0, MAX_LENGTH_PENALTY),
        why="length ** alpha must stay a finite number",
    )

    @property
    def decoding(self) -> DecodeChoice:
        """The decode defaults the export keeps in place of its run's."""
        return DecodeChoice(self.beam, self.length_penalty)


@dataclass(frozen=True)
class ImportJob:
    """What `s2s import` was asked: a model in another toolkit's format, and the run to make of it."""

    model_dir: Path = argument(
        "A local MarianMT model directory, as Hugging Face publishes the OPUS-MT models: config.json, "
        "model.safetensors (or pytorch_model.bin), source.spm, target.spm, vocab.json."
    )
    run_dir: Path = argument("New (or empty) run directory to write the model into.")


@dataclass(frozen=True)
class ServeJob:
    """What `s2s serve` was asked."""

    run_dir: Path = RUN_DIR()  # or a CTranslate2 export of one
    host: str = option("127.0.0.1", "Address to listen on (0.0.0.0: every interface).")
    port: int = option(8000, "Port (0: a free one, named in the log).", between=(0, 65535))
    settings: ServerSettings = group(ServerSettings())
    placement: Placement = group(AUTO)
    access_log: bool = option(False, "Log every request.", "--verbose", "-v")
