"""What every `s2s` command shares: `--version`, `--verbose`, and the logging setup."""

from __future__ import annotations

import errno
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer import Option

from seq2seq.cli.exits import fail, silence_stdout
from seq2seq.errors import EXIT_BROKEN_PIPE


def show_version(asked: bool) -> None:
    if asked:
        from seq2seq.commands.version import version_lines

        try:
            typer.echo("\n".join(version_lines()))
            sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        except OSError as e:
            silence_stdout()
            if e.errno == errno.EPIPE:  # whoever read stdout has gone: quietly, as a Unix tool
                raise typer.Exit(EXIT_BROKEN_PIPE) from None
            fail(f"{e.strerror or e}: standard output")
        raise typer.Exit()


Version = Annotated[
    bool,
    Option(
        "--version",
        help="Show s2s's version, torch's and CTranslate2's, the CPU and GPUs it sees, and the engine "
        "--engine auto picks here; then exit.",
        callback=show_version,
        is_eager=True,
    ),
]
Verbose = Annotated[bool, Option("--verbose", "-v", help="Log progress details.")]


def setup_logging(level: int, log_file: Path | None = None) -> None:
    """s2s's log lines to stderr from `level` up and, with `log_file`, its INFO lines to that file."""
    log = logging.getLogger("seq2seq")
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


def verbosity(verbose: bool) -> None:
    """Log INFO lines with --verbose, else warnings only."""
    setup_logging(logging.INFO if verbose else logging.WARNING)
