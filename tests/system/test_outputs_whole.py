"""Outputs appear whole or not at all: an error or a signal leaves the previous file intact, a
symlinked output keeps its link, a FIFO is written directly."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.helpers import run_cli


def test_a_failed_translation_leaves_the_old_output_untouched(tiny_run, tmp_path):
    run = tiny_run.run
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"red cat\n" * 3 + b"blue \xff bird\n")
    out = tmp_path / "existing.hyp"
    out.write_text("the old translations\n")
    result = run_cli("translate", str(run), "-i", str(bad), "-o", str(out))
    assert result.exit_code == 2 and "line 4 is not valid UTF-8" in result.output
    assert out.read_text() == "the old translations\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "existing.hyp"]  # no temp file left


@pytest.mark.slow
def test_translation_to_a_file_is_written_as_it_goes_and_sigterm_keeps_the_old_file(tiny_run, tmp_path):
    """Lines reach the (temporary) output while input is still arriving; SIGTERM discards them."""
    run = tiny_run.run
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "translate", str(run), "-o", str(out), "--beam", "1"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        proc.stdin.write(b"red cat\nblue bird\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        partial: list[Path] = []
        while time.monotonic() < deadline:
            partial = [p for p in tmp_path.glob(".out.txt.*.tmp") if p.stat().st_size > 0]
            if partial:
                break
            time.sleep(0.1)
        assert partial, "no translated line was written before the input ended"
        assert partial[0].read_text().count("\n") == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()  # only if a check above failed: never leave a process behind
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_translation_replaces_the_output_whole_and_keeps_its_permissions(tiny_run, tmp_path):
    run = tiny_run.run
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(0o640)
    result = run_cli("translate", str(run), "-o", str(out), input="red cat\n\nblue bird\n")
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n") == 3
    assert out.stat().st_mode & 0o777 == 0o640


def test_an_output_symlink_keeps_pointing_at_its_file_and_a_fifo_is_written_directly(tiny_run, tmp_path):
    run = tiny_run.run
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target)
    assert run_cli("translate", str(run), "-o", str(link), input="red cat\n").exit_code == 0
    assert link.is_symlink() and target.read_text() != "old\n" and target.read_text().count("\n") == 1
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # never blocks, even if s2s fails
    try:
        assert run_cli("translate", str(run), "-o", str(fifo), input="red cat\nblue bird\n").exit_code == 0
        assert os.read(reader, 1 << 16).count(b"\n") == 2
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.slow
def test_overwrite_through_a_symlinked_run_directory(run_copy, tmp_path):
    config, run = run_copy.config, run_copy.run
    link = tmp_path / "link"
    link.symlink_to(run)
    raw = yaml.safe_load(config.read_text())
    raw["run_dir"] = str(link)
    config.write_text(yaml.safe_dump(raw | {"train": raw["train"] | {"max_steps": 2, "valid_every": 2}}))
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and (run / "checkpoints" / "step_2.pt").is_file()
    assert not (run / "checkpoints" / "step_12.pt").exists()
