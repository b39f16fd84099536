"""`s2s cache list` and `s2s cache clear`: the CTranslate2 exports s2s made of run directories on first
use (`seq2seq.ct2.export_cache`), kept in $S2S_CACHE_DIR, else $XDG_CACHE_HOME/s2s, else ~/.cache/s2s."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer import Argument, Option

from seq2seq.cli.expansion import between, verb
from seq2seq.cli.group import commands

app = commands(
    no_args_is_help=True,
    help="The CTranslate2 exports s2s made of runs on first use ($S2S_CACHE_DIR, else ~/.cache/s2s).",
)


@verb(app, "list")
def list_exports() -> None:
    """Each cached export: when it was made, its size, how it runs, its checkpoint and run directory."""
    from seq2seq.ct2.cache_entries import cache_entries, entries_table
    from seq2seq.ct2.export_cache import cache_root

    root = cache_root()
    typer.echo(entries_table(root, cache_entries(root)))


@verb(app, "clear")
def clear(
    run_dir: Annotated[
        Path | None, Argument(help="Only the exports of this run directory [default: every run's].")
    ] = None,
    older_than: Annotated[
        float | None,
        Option(
            help="Only the exports made more than DAYS days ago.",
            metavar="DAYS",
            callback=between(0.0, 36500.0, "a number of days"),
        ),
    ] = None,
) -> None:
    """Remove cached exports: all, those of RUN_DIR, or older ones (made again on their next use).

    An export another s2s is making is left as it is."""
    from seq2seq.ct2.cache_entries import clear_cache, human_size
    from seq2seq.ct2.export_cache import cache_root

    root = cache_root()
    cleared = clear_cache(root, run_dir, older_than)
    freed = human_size(sum(e.size for e in cleared.removed))
    typer.echo(f"removed {len(cleared.removed)} cached export(s) from {root}, {freed}")
    for entry in cleared.busy:
        typer.echo(f"left {entry.path}: another s2s is making it", err=True)
