"""What every `s2s` command shares: the group class that reports a parsing mistake as one `error:`
line and lays help texts out for any terminal width (`Commands`), an option's range check (`between`),
`--version`, and the logging setup."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import BadParameter, Option
from typer.core import TyperGroup

# click's UsageError, the base of every parsing mistake, in whichever copy of click typer runs on
USAGE_ERROR: Any = typer.BadParameter.__mro__[1]


class Commands(TyperGroup):
    """The commands: a mistake click finds while parsing (an unknown option, a number out of its
    range, a missing argument) is one `error: ...` line and exit code 2, like every other mistake.
    Each help text's paragraphs are one line each, wrapped by the terminal whatever its width (a
    docstring's own line breaks would cut a summary mid-sentence)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.help:
            command.help = one_line_paragraphs(command.help)
        return command

    def invoke(self, ctx: Any) -> Any:  # click's Context, in whichever copy
        try:
            return super().invoke(ctx)
        except USAGE_ERROR as e:
            where = f" (see {e.ctx.command_path} --help)" if e.ctx is not None else ""
            typer.echo(f"error: {e.format_message()}{where}", err=True)
            raise typer.Exit(2) from None


def show_version(asked: bool) -> None:
    if asked:
        from seq2seq.commands.version import version_lines

        try:
            typer.echo("\n".join(version_lines()))
            sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        except OSError as e:
            if e.errno == errno.EPIPE:  # whoever read stdout has gone: quietly, as a Unix tool
                silence_stdout()
                raise typer.Exit(EXIT_BROKEN_PIPE) from None
            typer.echo(f"error: {e.strerror or e}: standard output", err=True)
            silence_stdout()
            raise typer.Exit(2) from None
        raise typer.Exit()


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # what a shell reports for a Unix tool stopped by SIGPIPE


def silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise the output error again."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


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


def one_line_paragraphs(text: str) -> str:
    """`text` with each paragraph's lines joined into one (paragraphs stay apart)."""
    paragraphs = textwrap.dedent(text).strip().split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


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


def between(low: float, high: float, why: str = "") -> Callable[[Any], Any]:
    """An option's check: a number in [low, high], else a usage error that says what it implies
    (NaN and the infinities are refused too: every comparison with NaN is false)."""

    def check(value: Any) -> Any:
        if value is not None and not low <= value <= high:
            raise BadParameter(
                f"{value} is not in [{_shown(low)}, {_shown(high)}]" + (f": {why}" if why else "")
            )
        return value

    return check


def _shown(bound: float) -> str:
    return f"{bound:g}" if isinstance(bound, float) else str(bound)
