"""Running one step: its command as a child under min(its budget, the check's), in its own process group."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from benchmarks.gpu_check.check import ROOT, Check, StepResult
from benchmarks.gpu_check.steps import NotRun, Step

KILL_GRACE_S = 5
MIN_STEP_S = 5  # a step is not started with less of the check's budget left


def child_env(check: Check) -> dict[str, str]:
    """s2s from this tree (no install), unbuffered, no progress bars; the dry run hides every GPU."""
    env = os.environ | {"PYTHONUNBUFFERED": "1", "TQDM_DISABLE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if check.dry_run:
        env |= {"S2S_GPU_CHECK_DRY_RUN": "1", "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    return env


def run_command(command: list[str], env: dict[str, str], timeout: float, log: Path) -> int | None:
    """Run `command` from the repository root, its output appended to `log`; None if out of time.

    It runs in its own process group, so running out of time ends its children too (torchrun's
    workers, the benchmark's decoding workers).
    """
    with log.open("a", encoding="utf-8") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return None


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group, then SIGKILL to whatever of it is left after a grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_step(step: Step, check: Check, done: dict[str, StepResult], deadline: float) -> StepResult:
    """One step under min(its budget, what is left of the check's), or why it did not start."""
    if step.name not in check.steps:
        return StepResult(step.name, "skipped", note="not asked for (--steps)")
    command = step.command(check, done)
    if isinstance(command, NotRun):
        return StepResult(step.name, "not run" if command.failure else "skipped", note=command.note)
    left = deadline - time.monotonic()
    if left < MIN_STEP_S:
        return StepResult(step.name, "not run", note=f"the check's {check.budget_s:g} s ran out")
    budget = round(min(step.dry_budget_s if check.dry_run else step.budget_s, left), 1)
    result = StepResult(step.name, budget_s=budget, command=shlex.join(command))
    log = check.out / "gpu_check.log"
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n===== {step.name} (budget {budget:g} s): {result.command}\n")
    offset = log.stat().st_size
    start = time.monotonic()
    result.exit_code = run_command(command, child_env(check), budget, log)
    result.seconds = round(time.monotonic() - start, 1)
    with log.open(encoding="utf-8", errors="replace") as f:
        f.seek(offset)
        output = f.read()
    finish(step, check, result, output)
    return result


def finish(step: Step, check: Check, result: StepResult, output: str) -> None:
    """The status and the numbers of a step that ran; a failure prints the end of its output."""
    result.status = {0: "passed", None: "timed out"}.get(result.exit_code, "failed")
    if result.status == "timed out":
        result.note = f"stopped after its {result.budget_s:g} s"
    elif result.status == "failed":
        result.note = failure_line(output, result.exit_code)
    try:
        result.numbers = step.read(check, output)
    except (OSError, ValueError, KeyError, ElementTree.ParseError) as e:
        result.status, result.note = "failed", f"its results could not be read: {type(e).__name__}: {e}"
    if result.status != "passed":
        print("\n".join(output.rstrip().splitlines()[-12:]), flush=True)


def failure_line(output: str, exit_code: int | None) -> str:
    """The child's last `error:` line (or exception) if it printed one, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"error:|[\w.]*(Error|Exception)\b", line)]
    return f"exit {exit_code}: {(errors or lines or ['no output'])[-1][:300]}"
