"""The `s2s` command line: parse, load, call, report. The only module that knows exit codes.

A user's mistake (a `Seq2SeqError`) prints `error: ...` on stderr and exits with code 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import torch
import typer
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from seq2seq.checkpoint import RunDir, prepare_run_dir
from seq2seq.config import Config, check_data_files, load_config
from seq2seq.errors import Seq2SeqError
from seq2seq.textio import stream_line_chunks

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Train and use encoder-decoder Transformer translation models.",
)
log = logging.getLogger("seq2seq")


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn user mistakes into one line on stderr and exit code 2; Ctrl-C into exit code 130."""
    try:
        yield
    except Seq2SeqError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None


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
    """Data paths as absolute paths, so the saved config works from any directory."""
    data = cfg.data
    absolute = {
        name: str(Path(getattr(data, name)).resolve())
        for name in ("train_src", "train_tgt", "valid_src", "valid_tgt")
    }
    return dataclasses.replace(cfg, data=dataclasses.replace(data, **absolute))


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
    from seq2seq.distributed import barrier, init_distributed, shutdown
    from seq2seq.tokenizer import load_tokenizers, prepare_tokenizers
    from seq2seq.training import train as run_training

    with user_errors():
        cfg = load_config(config, [*(overrides or []), *([f"train.device={device}"] if device else [])])
        check_data_files(cfg)
        cfg = resolve_paths(cfg)
        info = init_distributed(cfg.train.device)
        run = RunDir(cfg.run_dir)
        try:
            if info.is_main:
                prepare_run_dir(run, cfg, resume, overwrite)
            barrier(info)
            setup_logging(
                logging.INFO if info.is_main else logging.WARNING, run.log_file if info.is_main else None
            )
            if cfg.train.num_threads:
                torch.set_num_threads(cfg.train.num_threads)
            if info.is_main:
                tokenizers = prepare_tokenizers(
                    cfg.tokenizer, Path(cfg.data.train_src), Path(cfg.data.train_tgt), run.tokenizer_dir
                )
            barrier(info)
            if not info.is_main:
                tokenizers = load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint)
            if tokenizer_only:
                log.info("tokenizer ready in %s", run.tokenizer_dir)
                return
            with logging_redirect_tqdm([log]):
                progress, interrupted = run_training(cfg, run, tokenizers, info, resume)
            if interrupted:
                raise typer.Exit(130)
            log.info(
                "finished at step %d (epoch %d); run directory: %s", progress.step, progress.epoch, run.path
            )
        finally:
            shutdown(info)


@app.command()
def translate(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    input: Annotated[Path | None, typer.Option("-i", "--input", help="Source text (default: stdin).")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Translations (default: stdout).")
    ] = None,
    beam: Annotated[int | None, typer.Option(help="Beam size (1 = greedy).", min=1)] = None,
    nbest: Annotated[
        int, typer.Option(help="Hypotheses per line, tab-separated, each with its score.", min=1)
    ] = 1,
    length_penalty: Annotated[float | None, typer.Option(help="GNMT length penalty alpha.", min=0)] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Source tokens per batch.", min=1)] = None,
    checkpoint: Annotated[str, typer.Option(help="best, last, a name in checkpoints/, or a path.")] = "best",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    scores: Annotated[bool, typer.Option(help="Append each hypothesis' score after a tab.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
) -> None:
    """Translate source lines with a trained run: exactly one output line per input line, in order."""
    from seq2seq.translate import Translator

    setup_logging(logging.INFO if verbose else logging.WARNING)
    with user_errors():
        translator = Translator.load(run_dir, checkpoint, device)
        settings = translator.settings(beam=beam, nbest=nbest, length_penalty=length_penalty)
        if settings.nbest > settings.beam:
            settings = dataclasses.replace(settings, beam=settings.nbest)
        budget = max_tokens or translator.config.decode.max_tokens
        with contextlib.ExitStack() as stack:
            source = stack.enter_context(open(input, "rb")) if input else sys.stdin.buffer
            sink = stack.enter_context(open(output, "w", encoding="utf-8")) if output else sys.stdout
            bar = stack.enter_context(tqdm(disable=output is None, unit=" lines", file=sys.stderr))
            done = 0
            for chunk in stream_line_chunks(source, str(input or "stdin")):
                for result in translator.translate(chunk, settings, budget, first_line=done + 1):
                    fields = [
                        f"{t}\t{s:.4f}" if scores or nbest > 1 else t
                        for t, s in zip(result.texts, result.scores)
                    ]
                    sink.write("\t".join(fields) + "\n")
                sink.flush()
                done += len(chunk)
                bar.update(len(chunk))


@app.command()
def average(
    run_dir: Annotated[Path, typer.Argument(help="Run directory made by `s2s train`.")],
    last: Annotated[
        int, typer.Option(help="How many of the latest numbered checkpoints to average.", min=1)
    ] = 5,
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


def main() -> None:
    app()
