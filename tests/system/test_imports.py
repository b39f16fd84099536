"""What importing a part of the package brings along, seen from a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TrainedRun
from tests.helpers import ROOT, run_cli

# `python -m seq2seq ARGS`, then one line on stderr: whether torch was imported on the way
IMPORTS_TORCH = """
import runpy, sys
sys.argv = ["s2s", *sys.argv[1:]]
try:
    runpy.run_module("seq2seq", run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
sys.stderr.write(f"\\ntorch imported: {'torch' in sys.modules}\\n")
sys.exit(code)
"""
THREE_LINES = "red cat runs\n\nthe big tree\n"


def command(*args: str, cache: Path | None = None) -> tuple[str, bool]:
    """What `s2s ARGS` printed for three lines in, and whether it imported torch; it must succeed."""
    env = os.environ | {"OMP_NUM_THREADS": "1"} | ({"S2S_CACHE_DIR": str(cache)} if cache else {})
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_TORCH, *args],
        input=THREE_LINES,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr.rstrip().endswith("torch imported: True")


@pytest.mark.slow
def test_the_model_and_the_search_need_no_tokenizer_library():
    """Special ids live in a leaf module: importing the model does not import SentencePiece."""
    modules = "seq2seq.models.encoder_decoder, seq2seq.decoding.search, seq2seq.training.loss"
    code = f"import sys, {modules}; print('sentencepiece' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--help",), ("translate", "--help")], ids=["s2s", "translate"])
def test_help_imports_no_torch(args):
    """A person asking how to use a command waits for the interpreter, not for torch."""
    out, torch_imported = command(*args)
    assert "Usage" in out and not torch_imported


@pytest.mark.slow
def test_translating_with_ctranslate2_imports_no_torch(tiny_run: TrainedRun, tmp_path: Path):
    """Lines through an export, and through a run whose export is in the cache (the default engine on
    a CPU), start as fast as the interpreter and CTranslate2 load: torch is never imported."""
    export = tmp_path / "export"
    assert run_cli("export", str(tiny_run.run), str(export)).exit_code == 0
    out, torch_imported = command("translate", str(export), "--engine", "ctranslate2")
    assert len(out.splitlines()) == 3 and not torch_imported
    cache = tmp_path / "cache"
    first, made_with_torch = command("translate", str(tiny_run.run), "--device", "cpu", cache=cache)
    assert made_with_torch  # the cache's export is made from the weights, by torch
    again, torch_imported = command("translate", str(tiny_run.run), "--device", "cpu", cache=cache)
    assert again == first and len(again.splitlines()) == 3 and not torch_imported
    _, own_imports_torch = command("translate", str(tiny_run.run), "--engine", "s2s", cache=cache)
    assert own_imports_torch  # s2s's own decoder is torch


@pytest.mark.slow
@pytest.mark.parametrize("omp", [None, "1"])
def test_the_cores_counted_without_torch_are_the_threads_torch_takes(omp):
    """CTranslate2 decodes a batch per core (`usable_cores`), as many as torch would use threads."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env |= {"OMP_NUM_THREADS": omp} if omp else {}
    code = (
        "import torch; from seq2seq.cpu import usable_cores; print(torch.get_num_threads(), usable_cores())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    torch_threads, cores = done.stdout.split()
    assert cores == torch_threads


# A refused command, and why: each is refused by a check that needs no torch (`{run}`: a trained run,
# `{new}`: a path that does not exist yet, `{bad}`: a config with a misspelt key)
REFUSED = {
    "train: the run exists": "train {run}/config.yaml --set run_dir={run}",
    "train: no such config": "train {new}.yaml",
    "train: a misspelt key": "train {bad}",
    "train: --resume and --overwrite": "train {run}/config.yaml --set run_dir={new} --resume --overwrite",
    "train: nothing to resume": "train {run}/config.yaml --set run_dir={new} --resume",
    "prepare: a misspelt key": "prepare {bad}",
    "translate: no such run": "translate {new} -i {run}/config.yaml",
    "translate: no such --rerank run": "translate {run} --engine s2s --rerank {new} -i {run}/config.yaml",
    "evaluate: no such --rerank run": "evaluate {run} --rerank {new} --src {src} --ref {src}",
    "score: no such run": "score {new} --src {src} --tgt {src}",
    "score: no such source": "score {run} --src {new} --tgt {src}",
    "average: no such run": "average {new}",
    "average: more than it has": "average {run} --last 99",
    "export: no such run": "export {new} {new}_export",
    "export: no such checkpoint": "export {run} {new} --checkpoint nonesuch",
    "export: into a full directory": "export {run} {run}",
    "import: no such model": "import {new} {new}_run",
    "serve: no such run": "serve {new}",
    "pipeline: a misspelt key": "pipeline {bad}",
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_command_answers_before_torch_loads(tiny_run: TrainedRun, tmp_path: Path, case: str):
    """The mistakes a person makes most (a wrong path, a misspelt key, a run that exists) are refused
    by checks that need no torch, so the answer comes in the time the interpreter takes to start."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("run_dir: somewhere\ntrian: {}\n", encoding="utf-8")
    paths = {"run": tiny_run.run, "new": tmp_path / "new", "bad": bad, "src": tiny_run.data / "valid.src"}
    args = REFUSED[case].format(**paths).split()
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_TORCH, *args], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert done.returncode == 2 and "error:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.rstrip().endswith("torch imported: False"), done.stderr
    assert not (tmp_path / "new").exists()
