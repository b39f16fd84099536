"""The `s2s` command line: parse, load, call, report. The only module that knows exit codes.

A user's mistake (a `Seq2SeqError`) prints `error: ...` on stderr and exits with code 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import logging
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import torch
import typer
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from seq2seq.config import Config, check_data_files, load_config
from seq2seq.data.textio import stream_line_chunks
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.files import atomic_output, check_outputs
from seq2seq.rundir import RunDir

if TYPE_CHECKING:
    from seq2seq.ct2.engine import CT2Translator
    from seq2seq.translate.translator import Translator

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Train and use Transformers: translators (encoder-decoder, decoder-only), readers (classify, tag).",
)
log = logging.getLogger("seq2seq")

# Options shared by `translate` and `evaluate`.
Beam = Annotated[int | None, typer.Option(help="Beam size (1 = greedy).", min=1)]
LengthPenalty = Annotated[float | None, typer.Option(help="GNMT length penalty alpha.", min=0)]
MaxTokens = Annotated[int | None, typer.Option(help="Source tokens per batch.", min=1)]
MaxLenA = Annotated[
    float | None, typer.Option(help="Longest output = A x source tokens + B (decode.max_len_a).", min=0)
]
MaxLenB = Annotated[int | None, typer.Option(help="See --max-len-a (decode.max_len_b).", min=0)]
MinLen = Annotated[int | None, typer.Option(help="Shortest output in tokens (decode.min_len).", min=0)]
NoRepeatNgram = Annotated[
    int | None, typer.Option(help="Never repeat an n-gram of this size (decode.no_repeat_ngram).", min=0)
]
Sampling = Annotated[
    bool, typer.Option(help="Draw each token at random instead of searching (back-translation).")
]
Temperature = Annotated[float, typer.Option(help="Sampling temperature.", min=1e-6)]
TopK = Annotated[int, typer.Option(help="Sample among the k most likely tokens (0 = all).", min=0)]
TopP = Annotated[
    float, typer.Option(help="Sample among the smallest set of tokens with mass p.", min=1e-6, max=1.0)
]
Seed = Annotated[int | None, typer.Option(help="Seed for --sampling (same seed, same output).", min=0)]
Quantize = Annotated[
    str | None, typer.Option(help="int8: dynamic int8 linear layers on the CPU (faster, -0.1 BLEU).")
]
Precision = Annotated[str, typer.Option(help="auto (bf16 on GPUs, fp32 on CPU), fp32, bf16 or fp16 (GPU).")]
CheckpointName = Annotated[
    list[str] | None,
    typer.Option(
        help="best, last, a name in checkpoints/, or a path; repeat for an ensemble [default: best]."
    ),
]
DecodeDevice = Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")]


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # what a shell reports for a Unix tool stopped by SIGPIPE


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn user mistakes into one line on stderr and exit code 2; Ctrl-C or SIGTERM into code 130.

    A reader that stops reading (`s2s translate ... | head -1`) ends the command quietly, like a
    Unix tool. SIGTERM raises KeyboardInterrupt, so outputs in progress are discarded, not left half
    written.
    """
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    except Seq2SeqError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    except OSError as e:  # files the user named: unreadable, unwritable, missing directory
        if e.errno == errno.EPIPE:  # BrokenPipeError: whoever read stdout has gone
            _silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        where = f": {e.filename}" if e.filename else ""
        typer.echo(f"error: {e.strerror or e}{where}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise the broken pipe again."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def setup_logging(level: int, log_file: Path | None = None) -> None:
    log.setLevel(logging.DEBUG)
    log.handlers.clear()
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(level)
    console.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(message)s", "%H:%M:%S"))
    log.addHandler(console)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))
        log.addHandler(file_handler)


def resolve_paths(cfg: Config) -> Config:
    """Data paths (and `train.init_from`) as absolute paths, so the saved config works from anywhere."""
    data = cfg.data

    def absolute(path: str) -> str:
        return str(Path(path).resolve()) if path else ""

    return dataclasses.replace(
        cfg,
        data=dataclasses.replace(
            data,
            train_src=tuple(map(absolute, data.train_src)),
            train_tgt=tuple(map(absolute, data.train_tgt)),
            valid_src=absolute(data.valid_src),
            valid_tgt=absolute(data.valid_tgt),
            prepared_dir=absolute(data.prepared_dir),
        ),
        train=dataclasses.replace(cfg.train, init_from=absolute(cfg.train.init_from)),
    )


@app.command()
def train(
    config: Annotated[Path, typer.Argument(help="YAML config file.")],
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="Override a config key: --set train.lr=3e-4.")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in run_dir from checkpoints/last.pt.")
    ] = False,
    overwrite: Annotated[bool, typer.Option(help="Delete the run in run_dir and start over.")] = False,
    tokenizer_only: Annotated[bool, typer.Option(help="Train the tokenizer, then stop.")] = False,
    device: Annotated[
        str | None, typer.Option(help="auto, cpu, cuda or cuda:N (overrides train.device).")
    ] = None,
) -> None:
    """Train a tokenizer and a model as CONFIG describes, into its run directory."""
    from seq2seq.data.encode import check_aligned
    from seq2seq.data.parallel import read_parallel
    from seq2seq.device import autocast_dtype, resolve_device
    from seq2seq.training.board import check_available as check_tensorboard
    from seq2seq.training.distributed import init_distributed, shutdown
    from seq2seq.training.setup import prepare_run
    from seq2seq.training.trainer import train as run_training

    with user_errors(), contextlib.ExitStack() as stack:
        cfg = load_config(config, [*(overrides or []), *([f"train.device={device}"] if device else [])])
        check_data_files(cfg)
        cfg = resolve_paths(cfg)
        autocast_dtype(resolve_device(cfg.train.device), cfg.train.precision)  # fail now, not in an hour
        if cfg.train.tensorboard:
            check_tensorboard()
        check_aligned(list(zip(cfg.data.train_src, cfg.data.train_tgt)))  # fail now, not after the tokenizer
        read_parallel(cfg.data.valid_src, cfg.data.valid_tgt)
        info = init_distributed(cfg.train.device)
        stack.callback(shutdown, info)
        run = RunDir(cfg.run_dir)
        setup_logging(logging.INFO if info.is_main else logging.WARNING)
        if not info.is_main:  # tqdm's logging redirect copies handlers without their levels
            log.setLevel(logging.WARNING)
        start_log = functools.partial(setup_logging, logging.INFO, run.log_file)
        tokenizers = prepare_run(
            cfg, run, info, (resume, overwrite), config, stack, start_log, None if tokenizer_only else 0
        )
        if cfg.train.num_threads:
            torch.set_num_threads(cfg.train.num_threads)
        if tokenizer_only:
            log.info("tokenizer ready in %s", run.tokenizer_dir)
            return
        with logging_redirect_tqdm([log]):
            progress, interrupted = run_training(cfg, run, tokenizers, info, resume)
        if interrupted:
            raise typer.Exit(130)
        log.info("finished at step %d (epoch %d); run directory: %s", progress.step, progress.epoch, run.path)


@app.command()
def prepare(
    config: Annotated[Path, typer.Argument(help="YAML config file.")],
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="Override a config key: --set data.max_len=200.")
    ] = None,
    workers: Annotated[int, typer.Option(help="Encoding processes (0 = one per CPU core).", min=0)] = 0,
) -> None:
    """Tokenize the training corpus once into memory-mapped arrays (training the tokenizer first if
    needed) and print its statistics. `s2s train` reuses them while the data and tokenizer match."""
    from seq2seq.data.encode import check_aligned
    from seq2seq.data.prepared import describe, prepared_dir, read_manifest
    from seq2seq.training.distributed import DistInfo
    from seq2seq.training.setup import prepare_run

    with user_errors(), contextlib.ExitStack() as stack:
        cfg = load_config(config, overrides or [])
        check_data_files(cfg)
        cfg = resolve_paths(cfg)
        check_aligned(list(zip(cfg.data.train_src, cfg.data.train_tgt)))
        run = RunDir(cfg.run_dir)
        setup_logging(logging.INFO)
        started = (run.checkpoint_dir / "last.pt").is_file()  # keep its tokenizer, check its data
        start_log = functools.partial(setup_logging, logging.INFO, run.log_file)
        prepare_run(cfg, run, DistInfo(), (started, False), config, stack, start_log, workers)
        print(f"prepared corpus: {prepared_dir(cfg)}\n{describe(read_manifest(prepared_dir(cfg)))}")


@app.command()
def translate(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    input: Annotated[Path | None, typer.Option("-i", "--input", help="Source text (default: stdin).")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Translations (default: stdout).")
    ] = None,
    beam: Beam = None,
    nbest: Annotated[
        int, typer.Option(help="Hypotheses per line, tab-separated, each with its score.", min=1)
    ] = 1,
    length_penalty: LengthPenalty = None,
    max_len_a: MaxLenA = None,
    max_len_b: MaxLenB = None,
    min_len: MinLen = None,
    no_repeat_ngram: NoRepeatNgram = None,
    sampling: Sampling = False,
    temperature: Temperature = 1.0,
    top_k: TopK = 0,
    top_p: TopP = 1.0,
    seed: Seed = None,
    max_tokens: MaxTokens = None,
    checkpoint: CheckpointName = None,
    device: DecodeDevice = "auto",
    precision: Precision = "auto",
    quantize: Quantize = None,
    scores: Annotated[bool, typer.Option(help="Append each hypothesis' score after a tab.")] = False,
    keep_unk: Annotated[
        bool, typer.Option(help="Show <unk> pieces in the output as ' ⁇ ' instead of dropping them.")
    ] = False,
    engine: Annotated[
        str,
        typer.Option(help="s2s (PyTorch), or ctranslate2: RUN_DIR is then a directory made by `s2s export`."),
    ] = "s2s",
    verbose: Verbose = False,
) -> None:
    """Translate source lines with a trained run: exactly one output line per input line, in order."""

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        check_std_streams(input, output)
        translator = load_translator(
            run_dir, engine, checkpoint, (device, precision, quantize), input, output
        )
        settings = translator.settings(
            nbest=nbest,
            **search_overrides(beam, length_penalty, max_len_a, max_len_b, min_len, no_repeat_ngram),
            **sampling_options(sampling, temperature, top_k, top_p, seed),
        )
        if settings.nbest > settings.beam:
            settings = dataclasses.replace(settings, beam=settings.nbest)
        budget = max_tokens or translator.config.decode.max_tokens
        with contextlib.ExitStack() as stack:
            source = stack.enter_context(open(input, "rb")) if input else sys.stdin.buffer
            # lines are written as they are decoded, to a temporary file renamed over OUTPUT at the end
            sink = stack.enter_context(atomic_output(output)) if output else sys.stdout
            bar = stack.enter_context(tqdm(disable=output is None, unit=" lines", file=sys.stderr))
            done = 0
            for chunk in stream_line_chunks(source, str(input or "stdin")):
                for result in translator.translate(chunk, settings, budget, done + 1, keep_unk):
                    fields = [
                        f"{t}\t{s:.4f}" if scores or nbest > 1 else t
                        for t, s in zip(result.texts, result.scores)
                    ]
                    sink.write("\t".join(fields) + "\n")
                sink.flush()
                done += len(chunk)
                bar.update(len(chunk))


def load_translator(
    run_dir: Path,
    engine: str,
    checkpoint: list[str] | None,
    placement: tuple[str, str, str | None],
    input: Path | None,
    output: Path | None,
) -> Translator | CT2Translator:
    """The translator of `engine` for RUN_DIR, once the output is known not to replace an input.

    `placement` is (device, precision, quantize).
    """
    device, precision, quantize = placement
    if engine == "ctranslate2":
        from seq2seq.ct2.engine import CT2Translator

        if checkpoint:
            raise Seq2SeqError("--checkpoint picks weights in a run; an export holds one set: leave it out")
        files = {f"part of the export {run_dir}": p for p in sorted(run_dir.rglob("*")) if p.is_file()}
        check_outputs({"-o/--output": output}, {"-i/--input": input, **files})
        return CT2Translator.load(run_dir, device, quantize)
    if engine != "s2s":
        raise Seq2SeqError(f"--engine {engine!r}: choose s2s or ctranslate2")
    from seq2seq.translate.translator import Translator

    checkpoint = checkpoint or ["best"]
    check_outputs({"-o/--output": output}, {"-i/--input": input, **run_inputs(run_dir, checkpoint)})
    return Translator.load(run_dir, checkpoint, device, precision, quantize)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    out_dir: Annotated[Path, typer.Argument(help="New (or empty) directory for the exported model.")],
    to: Annotated[str, typer.Option(help="The engine to export to: ctranslate2.")] = "ctranslate2",
    checkpoint: Annotated[str, typer.Option(help="best, last, a name in checkpoints/, or a path.")] = "best",
    quantize: Annotated[
        str | None, typer.Option(help="Store the weights as int8, int8_float32, int16, float16 or bfloat16.")
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Export a run's weights and tokenizer to CTranslate2 (pip install 's2s[ct2]')."""
    from seq2seq.ct2.export import QUANTIZATIONS, export_ctranslate2

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        if to != "ctranslate2":
            raise Seq2SeqError(f"--to {to!r}: s2s exports to ctranslate2")
        if quantize is not None and quantize not in QUANTIZATIONS:
            raise Seq2SeqError(f"--quantize {quantize!r}: choose one of {', '.join(QUANTIZATIONS)}")
        check_outputs({"OUT_DIR": out_dir}, run_inputs(run_dir, [checkpoint]))
        export_ctranslate2(run_dir, checkpoint, out_dir, quantize)
        print(f"exported to {out_dir}; translate with: s2s translate {out_dir} --engine ctranslate2")


def search_overrides(
    beam: int | None,
    length_penalty: float | None,
    max_len_a: float | None,
    max_len_b: int | None,
    min_len: int | None,
    no_repeat_ngram: int | None,
) -> dict[str, object]:
    """The search options `translate` and `evaluate` share (None: the run's decode config decides)."""
    return {
        "beam": beam,
        "length_penalty": length_penalty,
        "max_len_a": max_len_a,
        "max_len_b": max_len_b,
        "min_len": min_len,
        "no_repeat_ngram": no_repeat_ngram,
    }


def sampling_options(sampling: bool, temperature: float, top_k: int, top_p: float, seed: int | None) -> dict:
    """The sampling settings; asking for any of them without --sampling is a mistake worth saying."""
    if not sampling:
        if (temperature, top_k, top_p, seed) != (1.0, 0, 1.0, None):
            raise Seq2SeqError("--temperature, --top-k, --top-p and --seed apply to --sampling; add it")
        return {}
    return {"sampling": True, "temperature": temperature, "top_k": top_k, "top_p": top_p, "seed": seed}


def check_std_streams(input: Path | None, output: Path | None) -> None:
    """A closed stdin or stdout (`<&-`, `>&-`) is a clear error, not a crash in the middle of the job."""
    if input is None and sys.stdin is None:
        raise DataError("stdin is closed: give the source text with -i FILE")
    if output is None and sys.stdout is None:
        raise DataError("stdout is closed: write the translations to a file with -o FILE")
    if output is None and input is not None and _stdout_is(input):
        raise DataError(
            f"stdout is the input file {input} (`> {input.name}` empties it, `>> {input.name}` makes "
            "s2s read its own output): write the translations to another file"
        )


def _stdout_is(path: Path) -> bool:
    """Whether stdout is redirected to the regular file `path` (a terminal or pipe never is)."""
    try:
        out = os.fstat(1)
        return stat.S_ISREG(out.st_mode) and os.path.samestat(out, os.stat(path))
    except OSError:
        return False


def run_inputs(run_dir: Path | None, checkpoints: list[str]) -> dict[str, Path]:
    """The files a decoding command reads from a run: they must never be one of its outputs."""
    if run_dir is None:
        return {}
    named = {f"--checkpoint {name}": Path(name) for name in checkpoints if Path(name).is_file()}
    return {**RunDir(run_dir).own_files(), **named}


@app.command()
def evaluate(
    run_dir: Annotated[
        Path | None,
        typer.Argument(
            help="Run directory: translate --src with it; with --hyp, only adds its learning curves."
        ),
    ] = None,
    hyp: Annotated[
        list[Path] | None,
        typer.Option(help="Hypotheses to score; repeat to compare systems (the first is the baseline)."),
    ] = None,
    ref: Annotated[
        list[Path] | None, typer.Option(help="References, aligned by line; repeat for more.")
    ] = None,
    src: Annotated[
        Path | None,
        typer.Option(help="Source text: translated with RUN_DIR; with --hyp, shown in the report."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Translations of --src [default: RUN_DIR/SRC.CHECKPOINT.hyp]."),
    ] = None,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write scores, signatures, checksums and settings here.")
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(help="Write a self-contained HTML report to DIR/index.html (needs matplotlib)."),
    ] = None,
    tokenize: Annotated[
        str, typer.Option(help="BLEU tokenizer: 13a, intl, char, zh, spm, flores200, none...")
    ] = "13a",
    lowercase: Annotated[
        bool, typer.Option(help="Case-insensitive BLEU and chrF (TER always is, as in sacrebleu).")
    ] = False,
    chrf_plus: Annotated[
        bool, typer.Option("--chrf-plus", help="Score chrF++ (with word bigrams) instead of chrF.")
    ] = False,
    bootstrap: Annotated[
        int, typer.Option(help="Paired bootstrap resamples when comparing systems.", min=1)
    ] = 1000,
    task: Annotated[
        str | None,
        typer.Option(
            help="translate (BLEU, chrF, TER), classify (accuracy, macro-F1) or tag (token accuracy, "
            "span F1) [default: RUN_DIR's model.task, else translate]."
        ),
    ] = None,
    beam: Beam = None,
    length_penalty: LengthPenalty = None,
    max_len_a: MaxLenA = None,
    max_len_b: MaxLenB = None,
    min_len: MinLen = None,
    no_repeat_ngram: NoRepeatNgram = None,
    max_tokens: MaxTokens = None,
    checkpoint: CheckpointName = None,
    device: DecodeDevice = "auto",
    precision: Precision = "auto",
    quantize: Quantize = None,
    verbose: Verbose = False,
) -> None:
    """Score translations with sacreBLEU (BLEU, chrF, TER): given ones (--hyp), or RUN_DIR's of --src.

    A reader's predictions get accuracy and macro-F1 (classify) or token accuracy and span F1 (tag).
    Several --hyp files are compared with sacrebleu's paired bootstrap test against the first.
    """
    from seq2seq.evaluation.metrics import (
        MetricOptions,
        TextFile,
        evaluate_files,
        format_table,
        read_references,
        translate_timed,
        write_json,
    )
    from seq2seq.evaluation.reader_metrics import ReaderMetricOptions

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        check_evaluate_mode(run_dir, hyp or [], src, out)
        checkpoint = checkpoint or ["best"]
        if not hyp:
            out = out or run_dir / f"{src.name}.{'+'.join(Path(c).stem for c in checkpoint)}.hyp"
        check_outputs(
            {"--out": out, "--json": json_file, "--report": report / "index.html" if report else None},
            {
                "--src": src,
                **{f"--ref #{i + 1}": p for i, p in enumerate(ref or [])},
                **{f"--hyp #{i + 1}": p for i, p in enumerate(hyp or [])},
                **run_inputs(run_dir, checkpoint),
            },
        )
        task = evaluation_task(task, run_dir)
        options = MetricOptions(tokenize, lowercase, chrf_plus)
        options.bleu()  # an unknown tokenizer fails now, not after translating
        if report is not None:
            from seq2seq.evaluation.report import new_figure

            new_figure(1, 1)  # a missing matplotlib fails now, not after translating
        source = TextFile.read(src) if src else None
        references = read_references(ref or [], source)
        if task != "translate":
            options = ReaderMetricOptions(
                task, tuple(sorted({r.strip() for r in references[0].lines} - {""}))
            )
        translator, decode = None, None
        if not hyp:
            from seq2seq.translate.translator import Translator

            translator = Translator.load(run_dir, checkpoint, device, precision, quantize)
            settings = translator.settings(
                **search_overrides(beam, length_penalty, max_len_a, max_len_b, min_len, no_repeat_ngram)
            )
            decode = translate_timed(translator, source, out, settings, max_tokens)
            log.info("translations written to %s", out)
        result = evaluate_files(hyp or [out], references, options, source, bootstrap)
        result.run_dir, result.decode = run_dir, decode
        result.checkpoints = translator.checkpoints if translator else []
        typer.echo(format_table(result))
        if json_file is not None:
            write_json(result, json_file)
        if report is not None:
            from seq2seq.evaluation.report import write_report

            log.info("report written to %s", write_report(result, report, translator))


def evaluation_task(task: str | None, run_dir: Path | None) -> str:
    """What the hypotheses are: --task, else what RUN_DIR's model does, else translations."""
    from seq2seq.errors import EvaluateError

    if task is None:
        return RunDir(run_dir).load_config().model.task if run_dir is not None else "translate"
    if task not in ("translate", "classify", "tag"):
        raise EvaluateError(f"--task {task!r}: choose translate, classify or tag")
    if run_dir is not None and (run_task := RunDir(run_dir).load_config().model.task) != task:
        raise EvaluateError(f"--task {task}, but {run_dir} was trained for {run_task}")
    return task


def check_evaluate_mode(run_dir: Path | None, hyps: list[Path], src: Path | None, out: Path | None) -> None:
    """`s2s evaluate` scores given hypotheses (--hyp), or translates --src with RUN_DIR, then scores."""
    from seq2seq.errors import EvaluateError

    if hyps and out is not None:
        raise EvaluateError("--out names the translations of --src; with --hyp nothing is translated")
    if not hyps and run_dir is None:
        raise EvaluateError("give --hyp FILE to score hypotheses, or RUN_DIR --src FILE to translate them")
    if not hyps and src is None:
        raise EvaluateError(f"to translate with {run_dir}, give the source text with --src FILE")
    if run_dir is not None:
        RunDir(run_dir).load_config()  # a wrong path fails now, with a message that says so


@app.command()
def average(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    last: Annotated[
        int | None,
        typer.Option(
            help="How many of the latest numbered checkpoints to average [default: all kept].", min=1
        ),
    ] = None,
    output: Annotated[
        str, typer.Option(help="Name in checkpoints/ (or a path) for the result.")
    ] = "averaged",
) -> None:
    """Average the weights of the last N numbered checkpoints into one (use with --checkpoint averaged)."""
    from seq2seq.checkpoint import average_checkpoints

    setup_logging(logging.INFO)
    with user_errors():
        path, used = average_checkpoints(RunDir(run_dir), last, output)
        log.info("averaged %s into %s", ", ".join(p.name for p in used), path)


@app.command()
def serve(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port (0: a free one, named in the log).", min=0, max=65535)
    ] = 8000,
    beam: Beam = None,
    length_penalty: LengthPenalty = None,
    max_len_a: MaxLenA = None,
    max_len_b: MaxLenB = None,
    min_len: MinLen = None,
    no_repeat_ngram: NoRepeatNgram = None,
    max_tokens: MaxTokens = None,
    checkpoint: CheckpointName = None,
    device: DecodeDevice = "auto",
    precision: Precision = "auto",
    quantize: Quantize = None,
    threads: Annotated[int, typer.Option(help="CPU threads for torch (0 = torch's default).", min=0)] = 0,
    batch_window_ms: Annotated[
        float,
        typer.Option(help="Decode once no request came for this long (10 such windows at most).", min=0),
    ] = 5.0,
    max_lines: Annotated[int, typer.Option(help="Lines per request.", min=1)] = 100,
    max_chars: Annotated[int, typer.Option(help="Characters per line.", min=1)] = 1000,
    max_body_bytes: Annotated[int, typer.Option(help="Bytes per request body.", min=1)] = 1 << 20,
    max_beam: Annotated[int, typer.Option(help="Largest beam or n-best a request may ask for.", min=1)] = 16,
    timeout: Annotated[
        float, typer.Option(help="Seconds a request may wait and decode before it gets 408.", min=0.001)
    ] = 60.0,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="Let pages from this origin call the API (repeat; * = any) [default: none]."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every request.")] = False,
) -> None:
    """Serve RUN_DIR over HTTP: a JSON API and a page at /, batching concurrent requests together."""
    from seq2seq.serve.server import check_available, listen, url
    from seq2seq.serve.server import run as run_server

    setup_logging(logging.INFO)
    with user_errors():
        check_available()
        from seq2seq.serve.app import ServerSettings, create_app
        from seq2seq.serve.limits import Limits
        from seq2seq.translate.translator import Translator

        translator = Translator.load(run_dir, checkpoint or ["best"], device, precision, quantize)
        if threads:
            torch.set_num_threads(threads)
        settings = ServerSettings(
            search=translator.settings(
                **search_overrides(beam, length_penalty, max_len_a, max_len_b, min_len, no_repeat_ngram)
            ),
            max_tokens=max_tokens or translator.config.decode.max_tokens,
            window_s=batch_window_ms / 1000,
            limits=Limits(max_lines, max_chars, max_body_bytes, timeout, max_beam),
            cors_origins=tuple(cors_origin or ()),
        )
        application = create_app(translator, settings, run_dir.resolve().name, decode_thread=False)
        sock = listen(host, port)
        log.info("serving %s on %s (Ctrl-C stops)", run_dir, url(sock))
        run_server(application, sock, verbose)
        log.info("stopped")


def main() -> None:
    app()
