"""`s2s translate -i FILE -o OUT` killed with SIGKILL in the middle of a corpus continues when the same
command is given again, and writes exactly the lines an uninterrupted run writes; `--precision auto`
continues at the precision it began with, whatever the machine it continues on would choose."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from seq2seq.translate import resume, translator
from seq2seq.translate.resume import CHUNK_LINES, partial_paths
from tests.conftest import ROOT, WORDS
from tests.helpers import run_cli, run_process


@pytest.mark.slow
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


@pytest.mark.parametrize(
    "first, then, recorded", [(torch.bfloat16, None, "torch.bfloat16"), (None, torch.bfloat16, "None")]
)
def test_precision_auto_continues_at_the_precision_it_began_with(
    tiny_run, tmp_path, monkeypatch, first, then, recorded
):
    monkeypatch.setattr(resume, "CHUNK_LINES", 4)
    rng = random.Random(7)
    source = tmp_path / "mono.txt"
    source.write_text("".join(" ".join(rng.choices(WORDS, k=3)) + "\n" for _ in range(10)), encoding="utf-8")
    args = ["translate", str(tiny_run.run), "-i", str(source), "--device", "cpu", "--engine", "s2s"]
    whole, out = tmp_path / "whole.txt", tmp_path / "out.txt"
    began = "bf16" if first is torch.bfloat16 else "fp32"
    assert run_cli(*args, "--precision", began, "-o", str(whole)).exit_code == 0

    chosen = []

    def cpu_says(dtype):  # what `auto` chooses on this CPU, pretended; counts the choices
        return lambda: chosen.append(dtype) or (dtype, "pretended")

    real = translator.Translator.translate
    chunks = []

    def killed_at_the_second_chunk(self, lines, *rest, **named):
        chunks.append(lines)
        if len(chunks) == 2:
            raise KeyboardInterrupt
        return real(self, lines, *rest, **named)

    monkeypatch.setattr(translator, "auto_cpu_dtype", cpu_says(first))
    monkeypatch.setattr(translator.Translator, "translate", killed_at_the_second_chunk)
    assert run_cli(*args, "-o", str(out)).exit_code != 0
    assert json.loads(partial_paths(out)[1].read_text())["settings"]["dtype"] == recorded
    assert chosen == [first]

    monkeypatch.setattr(translator, "auto_cpu_dtype", cpu_says(then))  # another machine: the other
    monkeypatch.setattr(translator.Translator, "translate", real)
    again = run_cli(*args, "-o", str(out))
    assert again.exit_code == 0, again.output
    assert chosen == [first]  # not chosen again: the recorded precision holds
    assert out.read_bytes() == whole.read_bytes()


def test_restart_where_nothing_resumes_is_refused(tiny_run, tmp_path):
    refused = run_cli("translate", str(tiny_run.run), "--device", "cpu", "--restart", input="a b\n")
    assert refused.exit_code == 2 and "error: --restart" in refused.output


@pytest.mark.slow
def test_a_file_begun_by_one_engine_is_never_finished_by_another(tiny_run, tmp_path, monkeypatch):
    """`--engine auto` continues with the engine the record names (here CTranslate2, what auto took on
    this CPU) into the file an uninterrupted command writes, where it would now choose otherwise;
    forcing the other engine is refused, naming the engine, and OUTPUT is left unwritten."""
    from seq2seq.commands import engines
    from seq2seq.ct2.runtime import CT2Translator

    monkeypatch.setattr(resume, "CHUNK_LINES", 4)
    rng = random.Random(3)
    source = tmp_path / "mono.txt"
    source.write_text("".join(" ".join(rng.choices(WORDS, k=3)) + "\n" for _ in range(10)), encoding="utf-8")
    args = ["translate", str(tiny_run.run), "-i", str(source), "--device", "cpu"]
    whole, out = tmp_path / "whole.txt", tmp_path / "out.txt"
    assert run_cli(*args, "-o", str(whole)).exit_code == 0
    real, chunks = CT2Translator.translate, []

    def killed_at_the_second_chunk(self, lines, *rest, **named):
        chunks.append(lines)
        if len(chunks) == 2:
            raise KeyboardInterrupt
        return real(self, lines, *rest, **named)

    monkeypatch.setattr(CT2Translator, "translate", killed_at_the_second_chunk)
    assert run_cli(*args, "-o", str(out)).exit_code != 0
    assert json.loads(partial_paths(out)[1].read_text())["settings"]["engine"] == "ctranslate2"
    monkeypatch.setattr(CT2Translator, "translate", real)
    # auto would now keep s2s's decoder (as on a GPU): the record's engine still decides
    monkeypatch.setattr(engines, "_prefers_own", lambda placement: "pretended: a GPU")
    refused = run_cli(*args, "--engine", "s2s", "-o", str(out))
    assert refused.exit_code == 2 and "engine" in refused.output and not out.exists()
    continued = run_cli(*args, "-o", str(out))
    assert continued.exit_code == 0, continued.output
    assert out.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")
