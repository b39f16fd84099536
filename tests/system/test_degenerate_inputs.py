"""Degenerate inputs are normal inputs: no lines, only blank lines, or a chunk of standard input
that holds only blank lines translate to one empty line per input line, as any other text would.
(The server's empty requests: tests/integration/test_serve.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import run_cli

BLANK_INPUTS = ["", "\n", "\n\n\n", "  \n\t\n \u3000\n", "\r\n\n"]


@pytest.mark.parametrize("text", BLANK_INPUTS, ids=repr)
@pytest.mark.parametrize("extra", [[], ["--nbest", "2", "--scores"]], ids=["best", "nbest"])
def test_blank_lines_translate_to_empty_lines_one_per_input_line(tiny_run, tmp_path, text, extra):
    lines = text.count("\n")
    empty = "\t".join(["\tblank"] * 2) if extra else ""
    from_stdin = run_cli("translate", str(tiny_run.run), *extra, input=text)
    assert from_stdin.exit_code == 0, from_stdin.output
    assert from_stdin.stdout == f"{empty}\n" * lines
    source, out = tmp_path / "blank.txt", tmp_path / "out.txt"
    source.write_text(text, encoding="utf-8")
    from_file = run_cli("translate", str(tiny_run.run), "-i", str(source), "-o", str(out), *extra)
    assert from_file.exit_code == 0, from_file.output
    assert out.read_text(encoding="utf-8") == f"{empty}\n" * lines


@pytest.mark.slow
def test_a_chunk_of_standard_input_with_only_blank_lines_is_translated(tiny_run):
    """A pipe delivers what has arrived: one line with text, then a chunk of nothing but blank lines."""
    child = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "translate", str(tiny_run.run)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(b"red cat\n")
        child.stdin.flush()
        child.stdout.readline()  # translated: the next write arrives as a chunk of its own
        child.stdin.write(b"\n  \n\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, err.decode()
    assert out == b"\n\n\n"


def test_a_source_of_blank_lines_is_evaluated(tiny_run, tmp_path):
    source, ref, out = tmp_path / "src.txt", tmp_path / "ref.txt", tmp_path / "hyp.txt"
    source.write_text("\n \n\n", encoding="utf-8")
    ref.write_text("RED CAT\nBIRD\n\n", encoding="utf-8")
    result = run_cli(
        "evaluate", str(tiny_run.run), "--src", str(source), "--ref", str(ref), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == "\n\n\n"


def test_blank_lines_are_empty_lines_through_an_export_too(tiny_run, tmp_path):
    pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
    export = tmp_path / "export"
    assert run_cli("export", str(tiny_run.run), str(export)).exit_code == 0
    for text in BLANK_INPUTS:
        result = run_cli("translate", str(export), "--engine", "ctranslate2", input=text)
        assert result.exit_code == 0, result.output
        assert result.stdout == "\n" * text.count("\n")
