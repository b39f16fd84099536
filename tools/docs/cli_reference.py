"""The command-line reference, generated from the typer app (`seq2seq.cli.app`) through click.

`commands()` walks the commands as `--help` shows them; tests/unit/test_cli_help.py walks the same
commands to require help on every option, so every row of this page has a description.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer.main

from seq2seq.cli import app


def commands(group: Any, path: str = "s2s", parent: Any = None) -> Iterator[tuple[str, Any, Any]]:
    """(`s2s cache clear`, the command, its click context) for each command as `--help` shows it
    (through its group's `get_command`), subcommands included."""
    ctx = group.context_class(group, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield f"{path} {name}", command, command.context_class(command, info_name=name, parent=ctx)
        if hasattr(command, "list_commands"):  # a group (typer may run on its own copy of click)
            yield from commands(command, f"{path} {name}", ctx)


def cell(text: str) -> str:
    """`text` fit for one cell of a Markdown table."""
    return " ".join(text.split()).replace("\\[", "[").replace("|", "\\|")  # rich markup's escape


def command_section(path: str, command: Any, ctx: Any) -> list[str]:
    """One command: its usage, its help and a table of its arguments and options."""
    lines = [f"## `{path}`", "", "```text", command.get_usage(ctx).replace("Usage: ", ""), "```", ""]
    lines += [(command.help or "").replace("\\[", "["), ""]  # rich markup's escape, not text
    records = [(p, p.get_help_record(ctx)) for p in command.params if not getattr(p, "hidden", False)]
    records = [(p, r) for p, r in records if r is not None]
    if records:
        lines += ["| argument or option | description |", "|---|---|"]
        lines += [f"| `{cell(names)}` | {cell(text)} |" for _, (names, text) in records]
        lines.append("")
    return lines


def cli_reference() -> str:
    """The page: `s2s`'s own options, then every command."""
    root = typer.main.get_command(app)
    lines = [
        "# Command-line reference",
        "",
        "Generated from the `s2s` command line (`seq2seq/cli/`) by `tools/docs` at every build "
        "of this site: what `s2s COMMAND --help` prints. `python -m seq2seq` is the same as `s2s`. Logs "
        "and progress go to stderr, results to stdout; a mistake is one `error:` line and exit code 2.",
        "",
    ]
    lines += command_section("s2s", root, root.context_class(root, info_name="s2s"))
    for path, command, ctx in commands(root):
        lines += command_section(path, command, ctx)
    return "\n".join(lines).rstrip() + "\n"
