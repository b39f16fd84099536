"""`s2s pipeline` and the two commands its steps need besides training, decoding and scoring:
`s2s filter` (lines kept by rules: repeats, excluded text, scores, a count) and `s2s select` (the
decode settings chosen on val). Registered on the `s2s` command line by `seq2seq.cli`."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer import Argument, Option

from seq2seq.cli_app import Commands

pipeline_app = typer.Typer(cls=Commands)

Files = Annotated[list[Path], Option(help="Read this file (repeat it: read one after the other).")]


@pipeline_app.command()
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
    from seq2seq.cli import setup_logging, user_errors
    from seq2seq.commands.pipeline import run_pipeline

    setup_logging(logging.INFO)
    with user_errors():
        run_pipeline(file, dry_run, until, tuple(redo or ()))


@pipeline_app.command("filter")
def filter_lines(
    src: Files,
    out_src: Annotated[Path, Option(help="Write the kept source lines here.")],
    tgt: Annotated[list[Path] | None, Option(help="The target file of each --src (a parallel text).")] = None,
    out_tgt: Annotated[Path | None, Option(help="Write the kept target lines here.")] = None,
    exclude: Annotated[
        list[Path] | None, Option(help="Drop a source line that is a line of this file (repeatable).")
    ] = None,
    unique: Annotated[bool, Option(help="Drop a line (pair) already kept.")] = False,
    scores: Annotated[
        Path | None, Option(help="What `s2s score` wrote for the pairs: keep the best --keep of them.")
    ] = None,
    keep: Annotated[float, Option(help="With --scores: the share of the scored pairs kept.")] = 1.0,
    lines: Annotated[int, Option(help="Stop once this many are kept (0: no limit).", min=0)] = 0,
) -> None:
    """Keep the lines of a text (or pairs of a parallel text) that no rule drops, in order: blank
    ones are always dropped; --exclude, --unique and --scores drop more; --lines stops early."""
    from seq2seq.cli import user_errors
    from seq2seq.commands.filter import FilterJob, FilterRules, filter_text

    with user_errors():
        rules = FilterRules(tuple(exclude or ()), unique, scores, keep, lines)
        counts = filter_text(FilterJob(tuple(src), tuple(tgt or ()), out_src, out_tgt, rules))
        kept = counts.pop("kept", 0)
        dropped = ", ".join(f"{n:,} {why}" for why, n in counts.items() if why != "stopped at --lines")
        stopped = "; stopped at --lines" if "stopped at --lines" in counts else ""
        typer.echo(f"kept {kept:,}" + (f"; dropped {dropped}" if dropped else "") + stopped, err=True)


@pipeline_app.command()
def select(
    records: Annotated[list[Path], Argument(help="`s2s evaluate --json` records of the candidates on val.")],
    json_file: Annotated[Path | None, Option("--json", help="Write the choice and the ranking here.")] = None,
) -> None:
    """Choose decode settings on validation data: the best BLEU among the records (the mean over a
    setting's records, one per direction). Prints `CHECKPOINT[,CHECKPOINT...] LENGTH_PENALTY VAL_BLEU`."""
    from seq2seq.cli import user_errors
    from seq2seq.evaluation.selection import choose

    with user_errors():
        ranked = choose(records, json_file)
        for candidate in ranked:
            typer.echo(candidate.describe(), err=True)
        best = ranked[0]
        sys.stdout.write(f"{','.join(best.checkpoints)} {best.length_penalty:g} {best.val_bleu:.2f}\n")
