"""The one worker protocol: a measurement runs in a fresh child process, JSON spec in, JSON result out.

`spawn(task, spec)` runs `python -m benchmarks.workers TASK SPEC` from the repository root; the
child calls the task's `measure(spec) -> dict`, adds its own peak resident set (`peak_rss_mib`,
see memory.py) and prints the result as its last stdout line. A fresh process per measurement
keeps one engine's memory and warm caches out of the next one's numbers.
"""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.memory import own_peak_mib

ROOT = Path(__file__).resolve().parents[1]  # the repository
TASKS = {
    "decode": "benchmarks.decode",
    "default": "benchmarks.default_engine",
    "direct": "benchmarks.ct2_direct",
    "engine": "benchmarks.engines",
    "hf": "benchmarks.hf",
}  # task -> its module


class WorkerError(RuntimeError):
    """A worker process failed; the message ends with its stderr."""


def spawn(task: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run measurement `task` on `spec` in a fresh process; its result, `peak_rss_mib` included."""
    command = [sys.executable, "-m", "benchmarks.workers", task, json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise WorkerError(f"{task} worker failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    """The child's side: measure, then print one JSON line."""
    task, spec = argv
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    measure = importlib.import_module(TASKS[task]).measure
    result = measure(json.loads(spec))
    print(json.dumps(result | {"peak_rss_mib": round(own_peak_mib(), 1)}))


if __name__ == "__main__":
    main(sys.argv[1:])
