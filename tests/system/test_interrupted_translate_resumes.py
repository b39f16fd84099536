"""`s2s translate -i FILE -o OUT` killed with SIGKILL in the middle of a corpus continues when the same
command is given again, and writes exactly the lines an uninterrupted run writes."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time

from seq2seq.translate.resume import CHUNK_LINES, partial_paths
from tests.conftest import ROOT, WORDS
from tests.helpers import run_process


def test_a_killed_translation_resumes_with_the_lines_of_an_uninterrupted_one(tiny_run, tmp_path):
    rng = random.Random(5)
    # killed once the first chunk is recorded, while the second (as long) decodes
    lines = [" ".join(rng.choices(WORDS, k=rng.randint(1, 4))) for _ in range(2 * CHUNK_LINES + 50)]
    source = tmp_path / "mono.txt.gz"
    source.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    # sampling draws from a seeded generator per batch: equal only if the batches are the same ones
    args = ["translate", str(tiny_run.run), "-i", str(source), "--device", "cpu", "--precision", "fp32"]
    args += ["--sampling", "--seed", "3", "--max-tokens", "4000"]
    whole = tmp_path / "whole.txt"
    assert run_process(*args, "-o", str(whole)).returncode == 0

    out = tmp_path / "out.txt"
    partial, record = partial_paths(out)
    child = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", *args, "-o", str(out)],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not record.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    assert record.exists() and not out.exists(), "the kill came too late to interrupt anything"
    done = json.loads(record.read_text())["lines"]
    assert done == CHUNK_LINES

    again = run_process(*args, "-o", str(out))
    assert again.returncode == 0, again.stderr.decode()
    assert f"continuing {out} after line {done}" in again.stderr.decode()
    assert out.read_bytes() == whole.read_bytes()
    assert len(out.read_text().splitlines()) == len(lines)
    assert not partial.exists() and not record.exists()
