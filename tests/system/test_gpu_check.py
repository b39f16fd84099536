"""The GPU check (`scripts/gpu_check.sh`) cannot rot: its dry run goes through every step on the CPU
and fills every section of the summary; a directory without Multi30k is refused before any work; a
failing step is reported and the later steps still run; a step out of time is stopped, children
included, and the check's own budget holds; on one (stubbed) GPU the summary names it and the
torchrun step is skipped by design, not failed."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from benchmarks.gpu_check import machine
from benchmarks.gpu_check.__main__ import OUT_FILES
from benchmarks.gpu_check.check import MULTI30K, Check, StepResult
from benchmarks.gpu_check.process import run_step
from benchmarks.gpu_check.steps import (
    STEP_NAMES,
    STEPS,
    read_machine,
    read_tests,
    read_verbose_tests,
    torchrun_command,
)
from benchmarks.gpu_check.summary import SECTIONS, markdown
from seq2seq.device import cpu_has_bf16_kernels
from tests.helpers import MULTI30K_DIR, ROOT

pytestmark = pytest.mark.slow

DATA = MULTI30K_DIR


def gpu_check_sh(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    command = ["bash", str(ROOT / "scripts" / "gpu_check.sh"), *map(str, args)]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def sections(summary: str) -> dict[str, str]:
    """`## heading` -> the text under it."""
    parts = re.split(r"^## (.+)$", summary, flags=re.MULTILINE)
    return {heading: body.strip() for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def cuda_test_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "test_planted.py"
    path.write_text("import pytest\n\npytestmark = pytest.mark.cuda\n\n\n" + body, encoding="utf-8")
    return path


@pytest.mark.skipif(not (DATA / "train.de").is_file(), reason=f"needs Multi30k in {DATA}")
def test_the_dry_run_goes_through_every_step_and_fills_every_section(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = gpu_check_sh("--dry-run", DATA, "--out", out, "--work", tmp_path / "work")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    steps = json.loads((out / "steps.json").read_text())["steps"]
    assert {s["name"]: s["status"] for s in steps} == dict.fromkeys(STEP_NAMES, "passed")
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# s2s GPU check: DRY RUN on the CPU")
    found = sections(summary)
    for _, heading, _ in SECTIONS:
        body = found[f"{heading} (dry run)"]
        assert body and not body.startswith(("not measured", "not run")), (heading, body)
    assert re.search(r"\*\*\d+ passed, 0 failed, \d+ skipped\*\*", found["CUDA tests (dry run)"])
    # the log says what the JUnit file says: what a step stopped for time (no JUnit file) is read from
    log, junit = (out / "gpu_check.log").read_text(), read_tests(SimpleNamespace(out=out), "")
    assert read_verbose_tests(log)["passed"] == junit["passed"] != []
    precision = "bf16" if cpu_has_bf16_kernels() else "fp32"  # the dry run's: fp32 where bf16 is emulated
    throughput = found[next(h for h in found if h.startswith("Training throughput"))]
    for model in ("recipe", "base"):
        for impl in ("s2s", "nn.Transformer"):
            assert re.search(rf"^\| {model} \| {impl} \| {precision} \| .*% \|$", throughput, re.MULTILINE)
    fixed = found[next(h for h in found if h.startswith("The base model compiled at fixed shapes"))]
    assert re.search(rf"^\| recipe \| s2s fixed shapes \| {precision} \| .*% \|$", fixed, re.MULTILINE)
    assert "target tok/s" in found["Short training run (dry run)"]
    assert "validation at step 4" in found["Short training run (dry run)"]
    assert re.search(r"^\| beam5 \| no \|", found[next(h for h in found if h.startswith("Beam-5"))], re.M)
    assert "2 CPU processes (gloo)" in found["2-GPU torchrun (dry run)"]
    assert "| date | 20" in summary and "| software | torch " in summary
    files = list(out.rglob("*"))  # the check's output: the files it names, plain, directly under --out
    assert {f.name for f in files} <= set(OUT_FILES) and all(f.is_file() and f.parent == out for f in files)


def test_a_directory_without_multi30k_exits_2_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.de").write_text("ein Satz\n", encoding="utf-8")
    out, work = tmp_path / "out", tmp_path / "work"
    done = gpu_check_sh("--data", tmp_path / "data", "--out", out, "--work", work, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {tmp_path / 'data'} holds no Multi30k"), done.stderr
    assert "train.en, val.de" in done.stderr and "scripts/fetch_multi30k.sh [--from DIR]" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists() and not work.exists()
    done = gpu_check_sh("--out", out, timeout=60)  # no directory at all: never an empty path
    assert done.returncode == 2 and "give the Multi30k directory" in done.stderr and not out.exists()


@pytest.mark.skipif(not (DATA / "train.de").is_file(), reason=f"needs Multi30k in {DATA}")
def test_a_failing_step_is_reported_and_the_later_steps_still_run(tmp_path: Path) -> None:
    body = "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert 0, 'planted'\n"
    tests = cuda_test_file(tmp_path, body)
    out = tmp_path / "out"
    args = ["--dry-run", DATA, "--out", out, "--work", tmp_path / "work", "--tests", tests]
    done = gpu_check_sh(*args, "--steps", "cuda_tests,train_run")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "== cuda_tests: failed" in done.stdout and done.stdout.rstrip().endswith("== failed: cuda_tests")
    statuses = {s["name"]: s["status"] for s in json.loads((out / "steps.json").read_text())["steps"]}
    assert statuses["cuda_tests"] == "failed" and statuses["train_run"] == "passed"
    found = sections((out / "summary.md").read_text())
    assert "**1 passed, 1 failed, 0 skipped**" in found["CUDA tests (dry run)"]
    assert "- test_planted::test_fails: AssertionError: planted" in found["CUDA tests (dry run)"]
    assert "target tok/s" in found["Short training run (dry run)"]


def test_a_step_out_of_time_is_stopped_with_its_children_and_the_budget_holds(tmp_path: Path) -> None:
    """A test that starts a child and sleeps: the step's time runs out, the child ends with it, and
    the next step is not started in what is left of the check's 8 seconds."""
    data = tmp_path / "data"
    data.mkdir()
    for name in MULTI30K:
        (data / name).write_text("ein Satz\n" if name.endswith(".de") else "a sentence\n", encoding="utf-8")
    pid_file = tmp_path / "child.pid"
    body = (
        "import subprocess, time\n\n\ndef test_sleeps():\n"
        "    child = subprocess.Popen(['sleep', '120'])\n"
        f"    open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "    time.sleep(120)\n"
    )
    out = tmp_path / "out"
    tests = cuda_test_file(tmp_path, body)
    args = ["--dry-run", data, "--out", out, "--work", tmp_path / "work", "--tests", tests]
    done = gpu_check_sh(*args, "--steps", "cuda_tests,train_run", "--budget", "8", timeout=60)
    assert done.returncode == 1, done.stdout[-3000:]
    steps = {s["name"]: s for s in json.loads((out / "steps.json").read_text())["steps"]}
    assert steps["cuda_tests"]["status"] == "timed out" and steps["cuda_tests"]["seconds"] < 8 + 6
    assert (
        "test_planted::test_sleeps: still running when the step's time ran out"
        in (out / "summary.md").read_text()
    )
    assert steps["train_run"] == steps["train_run"] | {"status": "not run", "note": "the check's 8 s ran out"}
    status = Path(f"/proc/{pid_file.read_text()}/status")
    assert not status.is_file() or "\nState:\tZ" in status.read_text()  # gone, or a zombie awaiting init


def test_on_one_gpu_the_summary_names_it_and_torchrun_is_skipped_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU side of the check that the dry run cannot reach: `describe` on a (stubbed) H200, the
    torchrun step on one GPU, and the budgets of the steps that run there within six and a half minutes."""
    props = SimpleNamespace(name="NVIDIA H200", total_memory=150_106_259_456, major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    monkeypatch.setattr(machine, "nvidia_driver", lambda: "580.159.04")
    check = Check(tmp_path, tmp_path, tmp_path, False, "tests/system/test_cuda.py", STEP_NAMES, 390)
    machine.describe(False, str(tmp_path))
    results = {"machine": StepResult("machine", "passed", numbers=read_machine(check, ""))}
    torchrun = next(s for s in STEPS if s.name == "torchrun")
    results["torchrun"] = run_step(torchrun, check, results, deadline=float("inf"))
    assert results["torchrun"].status == "skipped" and not results["torchrun"].failed
    summary = markdown(check, results)
    assert summary.startswith("# s2s GPU check\n") and "dry run" not in summary
    assert (
        "| GPU | NVIDIA H200 x 1, 139.8 GiB, compute capability 9.0, driver 580.159.04, bf16 yes |" in summary
    )
    assert sections(summary)["2-GPU torchrun"] == "one GPU: skipped"
    two = {"machine": StepResult("machine", "passed", numbers={"gpus": 2})}
    command = torchrun_command(check, two)
    assert command[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]
    assert command[command.index("--device") + 1] == "cuda"
    assert sum(s.budget_s for s in STEPS if s.name != "torchrun") <= 390
