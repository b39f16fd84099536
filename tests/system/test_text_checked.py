"""Text is checked, not guessed: invalid UTF-8, a NUL byte (UTF-16) or a line longer than the limit
(1 MiB) is an error naming the file and line, after bounded reading; a UTF-8 byte-order mark is dropped."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seq2seq.data.textio import MAX_LINE_BYTES
from tests.conftest import ROOT, tiny_config_dict
from tests.helpers import endless_fifo, run_cli


def test_nul_bytes_are_an_error_naming_file_and_line(tiny_run, tmp_path):
    run = tiny_run.run
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("red cat\nblue bird\n".encode("utf-16-le"))
    for args in (
        ["translate", str(run), "-i", str(utf16)],
        ["evaluate", "--hyp", str(utf16), "--ref", str(utf16)],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert f"{utf16}: line 1 contains a NUL byte" in result.output
    result = run_cli("translate", str(run), input=b"red cat\nblue\x00 bird\n")
    assert result.exit_code == 2 and "stdin: line 2 contains a NUL byte" in result.output


def test_a_corpus_in_utf16_is_refused_before_training(tmp_path):
    raw = tiny_config_dict(tmp_path)
    path = Path(raw["data"]["train_tgt"])
    path.write_bytes(path.read_text().encode("utf-16-le"))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "NUL byte" in result.output
    assert not (tmp_path / "run").exists()


def test_a_utf8_bom_is_not_part_of_the_first_line(tiny_run, tmp_path):
    run = tiny_run.run
    ref = tmp_path / "ref.txt"
    ref.write_text("red cat on the house\nblue bird\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"\xef\xbb\xbf" + ref.read_bytes())
    result = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    assert '"score": 100.0' in (tmp_path / "s.json").read_text()
    plain = run_cli("translate", str(run), input="red cat\n").stdout
    with_bom = run_cli("translate", str(run), input="\ufeffred cat\n".encode()).stdout
    assert with_bom == plain


def _long_line_files(tmp_path: Path) -> tuple[Path, Path]:
    """long.txt: a line of text, then one a byte over the limit; ok.txt: two lines of text."""
    long, ok = tmp_path / "long.txt", tmp_path / "ok.txt"
    long.write_bytes(b"red cat\n" + b"a" * (MAX_LINE_BYTES + 1) + b"\n")
    ok.write_text("red cat\nblue bird\n", encoding="utf-8")
    return long, ok


def test_a_line_over_the_limit_is_an_error_naming_file_and_line_in_every_command(tiny_run, tmp_path):
    run = str(tiny_run.run)
    long, ok = _long_line_files(tmp_path)
    out = str(tmp_path / "out.txt")
    message = f"line 2 is longer than {MAX_LINE_BYTES:,} bytes"
    for args in (
        ["translate", run, "-i", str(long), "-o", out],
        ["evaluate", "--hyp", str(long), "--ref", str(ok)],
        ["evaluate", "--hyp", str(ok), "--ref", str(long)],
        ["evaluate", run, "--src", str(long), "--ref", str(ok), "--out", out],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{long}: {message}" in result.output, args
    result = run_cli("translate", run, input=long.read_bytes())
    assert result.exit_code == 2 and f"stdin: {message}" in result.output
    assert not Path(out).exists()


@pytest.mark.parametrize("side", ["train_src", "train_tgt", "valid_src"])
def test_a_corpus_with_a_line_over_the_limit_is_refused_before_training(tmp_path, side):
    raw = tiny_config_dict(tmp_path)
    path = Path(raw["data"][side])
    path.write_bytes(path.read_bytes() + b"a" * (MAX_LINE_BYTES + 1) + b"\n")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2, result.output
    assert f"{path}: line" in result.output and "is longer than" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.parametrize("fill, message", [(b"a", "is longer than"), (b"\0", "contains a NUL byte")])
@pytest.mark.parametrize("command", ["translate -i", "translate <", "evaluate --hyp"])
def test_a_line_that_never_ends_is_refused_after_bounded_reading(tiny_run, tmp_path, command, fill, message):
    """`s2s translate -i /dev/zero` or `yes | tr -d '\\n' | s2s translate`: an error after reading about
    the limit, not a hang or all the memory."""
    _, ok = _long_line_files(tmp_path)
    with endless_fifo(tmp_path, fill) as (fifo, written):
        args = {
            "translate -i": ["translate", str(tiny_run.run), "-i", str(fifo)],
            "translate <": ["translate", str(tiny_run.run)],
            "evaluate --hyp": ["evaluate", "--hyp", str(fifo), "--ref", str(ok)],
        }[command]
        with contextlib.ExitStack() as stack:
            stdin = stack.enter_context(open(fifo, "rb")) if command == "translate <" else None
            result = subprocess.run(
                [sys.executable, "-m", "seq2seq", *args],
                stdin=stdin,
                capture_output=True,
                cwd=ROOT,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
                timeout=120,
            )
    where = "stdin" if command == "translate <" else str(fifo)
    assert result.returncode == 2, result.stderr.decode()
    assert f"error: {where}: line 1 {message}".encode() in result.stderr
    assert b"Traceback" not in result.stderr
    assert written[0] <= 4 * MAX_LINE_BYTES
