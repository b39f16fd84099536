"""The `s2s` command line: parse, load, call, report. The only module that knows exit codes.

A user's mistake (a `Seq2SeqError`) prints `error: ...` on stderr and exits with code 2.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from typer import Argument, Option

from seq2seq import cli_options as opt
from seq2seq.cli_app import EXIT_BROKEN_PIPE, Commands, Version, setup_logging, silence_stdout
from seq2seq.cli_cache import cache_app
from seq2seq.cli_pipeline import pipeline_app
from seq2seq.config.bounds import SAMPLE_KEEP
from seq2seq.errors import Seq2SeqError
from seq2seq.run.layout import RunDir

app = typer.Typer(
    cls=Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(cache_app, name="cache")
app.add_typer(pipeline_app)  # pipeline, filter, select


@app.callback()
def options(version: Version = False) -> None:
    """Train and use Transformers: translators (encoder-decoder, decoder-only), readers (classify, tag)."""


log = logging.getLogger("seq2seq")


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
            silence_stdout()
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


@app.command()
def train(
    config: Annotated[Path, Argument(help="YAML config file.")],
    overrides: Annotated[
        list[str] | None, Option("--set", help="Override a config key: --set train.lr=3e-4.")
    ] = None,
    resume: Annotated[bool, Option(help="Continue the run in run_dir from checkpoints/last.pt.")] = False,
    overwrite: Annotated[
        bool, Option(help="Replace the run in run_dir (put back if this fails before a first checkpoint).")
    ] = False,
    tokenizer_only: Annotated[bool, Option(help="Train the tokenizer, then stop.")] = False,
    device: Annotated[str | None, Option(help="auto, cpu, cuda or cuda:N (overrides train.device).")] = None,
) -> None:
    """Train a tokenizer and a model as CONFIG describes, into its run directory."""
    import torch
    from tqdm.contrib.logging import logging_redirect_tqdm

    from seq2seq.training.distributed import init_distributed, shutdown, torchrun_info
    from seq2seq.training.plan import plan_training, run_mode
    from seq2seq.training.setup import claim, make_inputs, make_tokenizers_only
    from seq2seq.training.trainer import train as run_training

    with user_errors(), contextlib.ExitStack() as stack:
        info = torchrun_info()
        plan, valid, train_device = plan_training(
            config, overrides or [], device, run_mode(resume, overwrite), info
        )
        init_distributed(info, train_device)
        stack.callback(shutdown, info)
        setup_logging(logging.INFO if info.is_main else logging.WARNING)
        if not info.is_main:  # tqdm's logging redirect copies handlers without their levels
            log.setLevel(logging.WARNING)
        claimed = stack.enter_context(claim(plan, info))  # held until the command ends
        if info.is_main:
            setup_logging(logging.INFO, plan.run.log_file)
        if plan.cfg.train.num_threads:
            torch.set_num_threads(plan.cfg.train.num_threads)
        if tokenizer_only:
            make_tokenizers_only(claimed, info)
            log.info("tokenizer ready in %s", plan.run.tokenizer_dir)
            return
        inputs = make_inputs(claimed, valid, info)
        with logging_redirect_tqdm([log]):
            progress, interrupted = run_training(plan, inputs, info, train_device)
        if interrupted:
            raise typer.Exit(130)
        log.info(
            "finished at step %d (epoch %d); run directory: %s", progress.step, progress.epoch, plan.run.path
        )


@app.command()
def prepare(
    config: Annotated[Path, Argument(help="YAML config file.")],
    overrides: Annotated[
        list[str] | None, Option("--set", help="Override a config key: --set data.max_len=200.")
    ] = None,
    workers: opt.Workers = 0,
    overwrite: Annotated[
        bool, Option(help="Replace the run in run_dir: a new tokenizer and corpus, no checkpoints.")
    ] = False,
    sample: Annotated[
        int, Option(help=f"Print up to N pairs each cleaning rule dropped, per corpus (N <= {SAMPLE_KEEP}).")
    ] = 0,
    figure: Annotated[
        Path | None,
        Option(help="Draw the length distributions and the dropped pairs into this PNG (the report extra)."),
    ] = None,
) -> None:
    """Tokenize and clean each training corpus once into memory-mapped arrays (training the tokenizer
    first if needed) and print their statistics. `s2s train` reuses them while the data, the
    tokenizer and the rules match."""
    from seq2seq.data.manifest import describe, dropped_report
    from seq2seq.data.prepared import read_manifests
    from seq2seq.training.distributed import DistInfo
    from seq2seq.training.plan import plan_preparation
    from seq2seq.training.setup import claim, prepare_corpus

    with user_errors():
        if not 0 <= sample <= SAMPLE_KEEP:
            raise Seq2SeqError(
                f"--sample {sample}: s2s keeps {SAMPLE_KEEP} dropped pairs per rule; ask 0 to {SAMPLE_KEEP}"
            )
        plan = plan_preparation(config, overrides or [], overwrite, figure)
        setup_logging(logging.INFO)
        with claim(plan, DistInfo()) as claimed:
            setup_logging(logging.INFO, plan.run.log_file)
            corpus = prepare_corpus(claimed, workers)
        corpora = plan.cfg.data.training_corpora()
        manifests = read_manifests(corpus, corpora)
        print(f"prepared corpus: {corpus}\n{describe(manifests, {c.name: c.weight for c in corpora})}")
        if sample:
            print(dropped_report(corpus, corpora, sample))
        if figure is not None:
            from seq2seq.evaluation.corpus_figure import write_corpus_figure

            write_corpus_figure(manifests, figure)


@app.command()
def translate(
    run_dir: opt.RunDirArg,
    input: opt.Input = None,
    output: opt.Output = None,
    beam: opt.Beam = None,
    nbest: opt.NBest = 1,
    length_penalty: opt.LengthPenalty = None,
    length_norm: opt.LengthNorm = None,
    patience: opt.Patience = None,
    max_len_a: opt.MaxLenA = None,
    max_len_b: opt.MaxLenB = None,
    min_len: opt.MinLen = None,
    no_repeat_ngram: opt.NoRepeatNgram = None,
    sampling: opt.Sampling = False,
    temperature: opt.Temperature = 1.0,
    top_k: opt.TopK = 0,
    top_p: opt.TopP = 1.0,
    seed: opt.Seed = None,
    max_tokens: opt.MaxTokens = None,
    checkpoint: opt.CheckpointName = None,
    device: opt.DecodeDevice = "auto",
    precision: opt.Precision = "auto",
    quantize: opt.Quantize = None,
    scores: opt.Scores = False,
    keep_unk: opt.KeepUnk = False,
    engine: opt.Engine = "auto",
    tag: opt.Tag = "",
    to: opt.To = "",
    pivot: opt.Pivot = "",
    prefix: opt.Prefix = None,
    alignments: opt.Alignments = False,
    markup: opt.Markup = None,
    restart: opt.Restart = False,
    verbose: opt.Verbose = False,
) -> None:
    """Translate source lines with a trained run: exactly one output line per input line, in order.

    From a file into a file, the output is built in OUTPUT.partial, and a run that was interrupted
    continues where it stopped when the same command is given again."""
    from seq2seq.commands.translate import TranslateJob, translate as run_translate  # noqa: I001
    from seq2seq.translate.aligned import Annotations  # noqa: I001
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        asked = DecodeOverrides(
            beam, nbest, length_penalty, length_norm, max_len_a, max_len_b, min_len, no_repeat_ngram,
            sampling, temperature, top_k, top_p, seed, max_tokens, tuple(checkpoint or ()), patience,
        )  # fmt: skip
        run_translate(TranslateJob(
            run_dir, asked, Placement(device, precision, quantize), engine, scores, keep_unk, tag, to, pivot,
            prefix, restart, Annotations.asked(alignments, markup),
        ), input, output)  # fmt: skip


@app.command()
def export(
    run_dir: opt.RunDirArg,
    out_dir: opt.ExportDir,
    to: opt.ExportTo = "ctranslate2",
    checkpoint: opt.ExportCheckpoint = "best",
    quantize: opt.ExportQuantize = None,
    full_range_int8: opt.FullRangeInt8 = False,
    shortlist: opt.Shortlist = 0,
    shortlist_common: opt.ShortlistCommon = 100,
    verbose: opt.Verbose = False,
) -> None:
    """Export a run to CTranslate2 (to ship it: translate, evaluate and serve make their own on first
    use) or Hugging Face transformers (pip install 's2s\\[hf]')."""
    from seq2seq.commands.export import ExportJob
    from seq2seq.commands.export import export as run_export

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        job = ExportJob(to, checkpoint, quantize, full_range_int8, shortlist, shortlist_common)
        print(run_export(run_dir, out_dir, job))


@app.command()
def evaluate(
    run_dir: opt.EvalRunDir = None,
    hyp: opt.Hyps = None,
    ref: opt.Refs = None,
    src: opt.Src = None,
    out: opt.Out = None,
    json_file: opt.JsonFile = None,
    report: opt.ReportDir = None,
    tokenize: opt.Tokenize = "13a",
    lowercase: opt.Lowercase = False,
    chrf_plus: opt.ChrfPlus = False,
    bootstrap: opt.Bootstrap = 1000,
    augment: opt.Augment = None,
    seed: opt.AugmentSeed = 1,
    task: opt.Task = None,
    beam: opt.Beam = None,
    length_penalty: opt.LengthPenalty = None,
    length_norm: opt.LengthNorm = None,
    patience: opt.Patience = None,
    max_len_a: opt.MaxLenA = None,
    max_len_b: opt.MaxLenB = None,
    min_len: opt.MinLen = None,
    no_repeat_ngram: opt.NoRepeatNgram = None,
    max_tokens: opt.MaxTokens = None,
    checkpoint: opt.CheckpointName = None,
    device: opt.DecodeDevice = "auto",
    precision: opt.Precision = "auto",
    quantize: opt.Quantize = None,
    engine: opt.Engine = "auto",
    tag: opt.Tag = "",
    to: opt.To = "",
    pivot: opt.Pivot = "",
    verbose: opt.Verbose = False,
) -> None:
    """Score translations with sacreBLEU (BLEU, chrF, TER): given ones (--hyp), or RUN_DIR's of --src.

    A reader's predictions get accuracy and macro-F1 (classify) or token accuracy and span F1 (tag).
    Several --hyp files are compared with sacrebleu's paired bootstrap test against the first.
    """
    from seq2seq.commands.evaluate import evaluate as run_evaluate
    from seq2seq.evaluation.metrics import MetricOptions
    from seq2seq.evaluation.plan import EvaluateFiles
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        files = EvaluateFiles(run_dir, tuple(hyp or ()), tuple(ref or ()), src, out, json_file, report)
        asked = DecodeOverrides(
            beam=beam, length_penalty=length_penalty, length_norm=length_norm, max_len_a=max_len_a,
            max_len_b=max_len_b, min_len=min_len, no_repeat_ngram=no_repeat_ngram, max_tokens=max_tokens,
            checkpoints=tuple(checkpoint or ()), patience=patience,
        )  # fmt: skip
        placement = Placement(device, precision, quantize)
        metrics, augmented = MetricOptions(tokenize, lowercase, chrf_plus), (augment, seed)
        run_evaluate(files, task, asked, placement, engine, metrics, bootstrap, (tag, to, pivot), augmented)


@app.command()
def score(
    run_dir: opt.RunDirArg,
    src: opt.ScoreSrc,
    tgt: opt.ScoreTgt = None,
    nbest: opt.ScoreNBest = None,
    output: opt.Output = None,
    reverse: opt.Reverse = None,
    tokens: opt.TokenScores = False,
    tag: opt.Tag = "",
    to: opt.To = "",
    reverse_to: opt.ReverseTo = "",
    max_tokens: opt.MaxTokens = None,
    checkpoint: opt.CheckpointName = None,
    device: opt.DecodeDevice = "auto",
    precision: opt.Precision = "auto",
    verbose: opt.Verbose = False,
) -> None:
    """The model's log-probability of each (source, target) pair: one line out per pair in,
    `total<TAB>per token`; with --reverse, `dual cross-entropy<TAB>H_fwd<TAB>H_rev` (filtering);
    with --nbest, `translate --nbest` lines re-ranked by it."""
    from seq2seq.commands.score import ScoreJob
    from seq2seq.commands.score import score as run_score
    from seq2seq.translate.placement import Placement

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        placement, checkpoints = Placement(device, precision, None), tuple(checkpoint or ())
        job = ScoreJob(
            run_dir, src, tgt, nbest, reverse, tokens, tag, to, reverse_to, max_tokens, checkpoints, placement
        )
        run_score(job, output)


@app.command()
def average(
    run_dir: opt.RunDirArg,
    last: Annotated[
        int | None,
        Option(help="How many of the latest numbered checkpoints to average [default: all kept].", min=1),
    ] = None,
    output: Annotated[str, Option(help="Name in checkpoints/ (or a path) for the result.")] = "averaged",
) -> None:
    """Average the weights of the last N numbered checkpoints into one (use with --checkpoint averaged)."""
    from seq2seq.checkpoint import average_checkpoints
    from seq2seq.data.tokenizer import tokenizer_checksums

    setup_logging(logging.INFO)
    with user_errors():
        run = RunDir(run_dir)
        sums = tokenizer_checksums(run.tokenizer_dir, run.load_config().tokenizer.joint)
        path, used = average_checkpoints(run, sums, last, output)
        log.info("averaged %s into %s", ", ".join(p.name for p in used), path)


@app.command()
def serve(
    run_dir: opt.RunDirArg,
    host: opt.Host = "127.0.0.1",
    port: opt.Port = 8000,
    beam: opt.Beam = None,
    length_penalty: opt.LengthPenalty = None,
    length_norm: opt.LengthNorm = None,
    patience: opt.Patience = None,
    max_len_a: opt.MaxLenA = None,
    max_len_b: opt.MaxLenB = None,
    min_len: opt.MinLen = None,
    no_repeat_ngram: opt.NoRepeatNgram = None,
    max_tokens: opt.MaxTokens = None,
    checkpoint: opt.CheckpointName = None,
    device: opt.DecodeDevice = "auto",
    precision: opt.Precision = "auto",
    quantize: opt.Quantize = None,
    threads: opt.Threads = 0,
    batching: opt.Batching = "auto",
    batch_window_ms: opt.BatchWindow = 5.0,
    max_lines: opt.MaxLines = 100,
    max_chars: opt.MaxChars = 1000,
    max_body_bytes: opt.MaxBodyBytes = 1 << 20,
    max_beam: opt.MaxBeam = 16,
    timeout: opt.Timeout = 60.0,
    cors_origin: opt.CorsOrigins = None,
    to: opt.To = "",
    engine: opt.Engine = "auto",
    verbose: opt.LogRequests = False,
) -> None:
    """Serve RUN_DIR (or a CTranslate2 export of one) over HTTP: a JSON API and a page
    at /, batching concurrent requests together."""
    from seq2seq.serve.server import check_available
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement

    setup_logging(logging.INFO)
    with user_errors():
        check_available()  # before the server packages are imported
        from seq2seq.commands.serve import ServeJob
        from seq2seq.commands.serve import serve as run_serve
        from seq2seq.serve.app import ServerSettings
        from seq2seq.serve.limits import Limits

        asked = DecodeOverrides(
            beam=beam, length_penalty=length_penalty, length_norm=length_norm, max_len_a=max_len_a,
            max_len_b=max_len_b, min_len=min_len, no_repeat_ngram=no_repeat_ngram, max_tokens=max_tokens,
            checkpoints=tuple(checkpoint or ()), patience=patience,
        )  # fmt: skip
        limits = Limits(max_lines, max_chars, max_body_bytes, timeout, max_beam)
        origins = tuple(cors_origin or ())
        settings = ServerSettings(asked, batch_window_ms / 1000, limits, origins, to, engine, batching)
        placement = Placement(device, precision, quantize, threads)
        run_serve(ServeJob(run_dir, settings, placement), host, port, verbose)


def main() -> None:
    app()
