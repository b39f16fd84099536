"""The `s2s` command group: a parsing mistake is one `error:` line, help texts fit any terminal."""

from __future__ import annotations

import textwrap
from typing import Any

import typer
from typer.core import TyperGroup

from seq2seq.cli.exits import fail

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
            fail(f"{e.format_message()}{where}")


def commands(**settings: Any) -> typer.Typer:
    """A typer app of s2s commands (`Commands`), tracebacks off."""
    return typer.Typer(cls=Commands, add_completion=False, pretty_exceptions_enable=False, **settings)


def one_line_paragraphs(text: str) -> str:
    """`text` with each paragraph's lines joined into one (paragraphs stay apart)."""
    paragraphs = textwrap.dedent(text).strip().split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
