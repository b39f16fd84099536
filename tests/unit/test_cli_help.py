"""Every command and option says what it is: help texts that read as one paragraph each in a
terminal of any width (no line break inside a paragraph), and no option without help."""

from __future__ import annotations

import typer.main

from seq2seq.cli import app
from tests.helpers import run_cli
from tools.docs.cli_reference import commands  # the walk the command-line reference is made by


def test_every_option_has_help_and_every_help_paragraph_is_one_line():
    found = []
    for path, command, _ in commands(typer.main.get_command(app)):
        for paragraph in (command.help or "").split("\n\n"):
            if "\n" in paragraph:
                found.append(f"{path}: a paragraph of its help is cut into lines: {paragraph[:60]!r}")
        if not (command.help or "").strip():
            found.append(f"{path}: no help")
        for param in command.params:
            if not (getattr(param, "help", None) or "").strip():
                found.append(f"{path} {param.name}: no help")
    assert found == [], "\n".join(found)


def test_version_says_what_s2s_runs_with():
    result = run_cli("--version")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("s2s ") and "torch" in lines[1] and "ctranslate2" in lines[1]
    assert lines[2].startswith("CPU: ") and lines[3].startswith("--engine auto: ")
