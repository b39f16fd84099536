"""The `s2s` command line: it parses, loads, calls `seq2seq.commands` and reports; the only wing that
imports typer. Each command's options are generated from the dataclasses its work takes
(`seq2seq.cli.expansion`)."""

from seq2seq.cli.main import app, main

__all__ = ["app", "main"]
