"""`s2s pipeline` and the two commands its steps need besides training, decoding and scoring:
`s2s filter` (lines kept by rules: repeats, excluded text, scores, a count) and `s2s select` (the
decode settings chosen on val)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer import Argument, Option

from seq2seq.cli.common import setup_logging
from seq2seq.cli.expansion import verb
from seq2seq.cli.group import commands
from seq2seq.commands.filter import FilterJob
from seq2seq.evaluation.selection import SelectJob

app = commands()


@verb(app)
def pipeline(
    file: Annotated[Path, Argument(help="The pipeline's YAML file (docs/pipeline.md).")],
    dry_run: Annotated[
        bool, Option(help="Print each step, skipped or to run, with its commands; run and write nothing.")
    ] = False,
    until: Annotated[str | None, Option(help="Stop after this step.", metavar="STEP")] = None,
    redo: Annotated[
        list[str] | None,
        Option(
            help="Make this step again (the steps after it follow when what they read changes).",
            metavar="STEP",
        ),
    ] = None,
) -> None:
    """Run a pipeline's steps, from corpora to a deployed student: each step an s2s command, skipped
    when done as asked, continued when interrupted, refused when done otherwise."""
    from seq2seq.pipeline.run import run_pipeline

    setup_logging(logging.INFO)
    run_pipeline(file, dry_run, until, tuple(redo or ()))


@verb(app, "filter")
def filter_lines(job: FilterJob) -> None:
    """Keep the lines of a text (or pairs of a parallel text) that no rule drops, in order: blank
    ones are always dropped; --exclude, --unique and --scores drop more; --lines stops early."""
    from seq2seq.commands.filter import filter_text

    counts = filter_text(job)
    kept = counts.pop("kept", 0)
    dropped = ", ".join(f"{n:,} {why}" for why, n in counts.items() if why != "stopped at --lines")
    stopped = "; stopped at --lines" if "stopped at --lines" in counts else ""
    typer.echo(f"kept {kept:,}" + (f"; dropped {dropped}" if dropped else "") + stopped, err=True)


@verb(app)
def select(job: SelectJob) -> None:
    """Choose decode settings on validation data: the best BLEU among the records (the mean over a
    setting's records, one per direction). Prints `CHECKPOINT[,CHECKPOINT...] LENGTH_PENALTY VAL_BLEU`,
    then `RERANK_RUN RERANK_WEIGHT` for each run that reranks the best's beam."""
    from seq2seq.evaluation.selection import choose

    best, ranked = choose(job.records, job.json_file, job.within)
    for candidate in ranked:
        typer.echo(candidate.describe(), err=True)
    if best is not ranked[0]:
        typer.echo(
            f"chosen, the cheapest within {job.within:g} BLEU of the best: {best.describe()}", err=True
        )
    reranked = "".join(f" {run} {w:g}" for run, w in zip(best.rerank, best.rerank_weight, strict=True))
    sys.stdout.write(f"{','.join(best.checkpoints)} {best.length_penalty:g} {best.val_bleu:.2f}{reranked}\n")
