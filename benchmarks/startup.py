"""How long a person waits for a short command, whole process: `s2s --help`, `s2s translate --help`,
three lines piped through `s2s translate RUN` with the default engine (its export cache made
before the timing) and with s2s's own decoder (`--engine s2s`), and two refusals (`s2s train` of a
run that exists, `s2s export` into a directory that is not empty); each the median of
`--startup-runs` runs (5).

Each command is `python -m seq2seq` of this checkout in a fresh interpreter, with a temporary export
cache (S2S_CACHE_DIR), so the section leaves no cache entry behind: the first use of the default
engine makes the entry and is not timed. One more run of each, under `-X importtime`, says whether
it imported torch (what most of a slow start is).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import torch

from benchmarks.machine import cpu_model
from benchmarks.options import Options
from benchmarks.tables import format_table
from benchmarks.workers import ROOT

LINES = 3  # what a person pipes in and waits for


def source_lines(src: str, count: int = LINES) -> str:
    """The first `count` non-empty lines of `src`, as a command's standard input."""
    with open(src, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()][:count]
    return "".join(f"{line}\n" for line in lines)


def run_once(args: list[str], stdin: str | None, env: dict[str, str], code: int = 0) -> tuple[float, str]:
    """Seconds `python -m seq2seq ARGS` took, from start to exit (with exit code `code`), and its
    standard error."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "seq2seq", *args],
        input=stdin or "",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    seconds = time.perf_counter() - start
    if done.returncode != code:
        raise RuntimeError(f"exit code {done.returncode}: s2s {' '.join(args)}\n{done.stderr[-3000:]}")
    return seconds, done.stderr


def imports_torch(args: list[str], stdin: str | None, env: dict[str, str], code: int = 0) -> bool:
    """Whether the command imports torch (`-X importtime` lists every module it imports)."""
    _, err = run_once(args, stdin, env | {"PYTHONPROFILEIMPORTTIME": "1"}, code)
    return any(line.split("|")[-1].strip() == "torch" for line in err.splitlines())


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Each command's median whole-process seconds over `--startup-runs` runs, on this machine's CPU."""
    assert opts.run_dir is not None  # options.parse insists
    lines, translate = source_lines(opts.src), ["translate", opts.run_dir]
    run = opts.run_dir
    commands = {  # name: (arguments, standard input, exit code)
        "s2s --help": (["--help"], None, 0),
        "s2s translate --help": (["translate", "--help"], None, 0),
        f"s2s translate RUN < {LINES} lines": (translate, lines, 0),
        f"s2s translate RUN --engine s2s < {LINES} lines": ([*translate, "--engine", "s2s"], lines, 0),
        "s2s train RUN/config.yaml (refused: the run exists)": (
            ["train", f"{run}/config.yaml", "--set", f"run_dir={run}"],
            None,
            2,
        ),
        "s2s export RUN RUN (refused: not empty)": (["export", run, run], None, 2),
    }
    with tempfile.TemporaryDirectory() as cache:
        env = os.environ | {"S2S_CACHE_DIR": cache}
        _, made = run_once([*translate, "--verbose"], lines, env)  # makes the cache's entry
        chosen = next((line.split("engine: ", 1)[1] for line in made.splitlines() if "engine: " in line), "?")
        results = []
        for name, (args, stdin, code) in commands.items():
            seconds = [run_once(args, stdin, env, code)[0] for _ in range(opts.startup_runs)]
            results.append(
                {
                    "command": name,
                    "median_s": round(statistics.median(seconds), 3),
                    "min_s": round(min(seconds), 3),
                    "imports_torch": imports_torch(args, stdin, env, code),
                }
            )
    return {"cpu": cpu_model(), "runs": opts.startup_runs, "default_engine": chosen, "results": results}


def report(section: dict[str, Any]) -> str:
    header = ["command", "median s", "min s", "torch"]
    rows = [
        [r["command"], f"{r['median_s']:.3f}", f"{r['min_s']:.3f}", "yes" if r["imports_torch"] else "no"]
        for r in section["results"]
    ]
    return "\n".join(
        [
            f"== startup: whole process, median of {section['runs']} runs, on {section['cpu']}",
            f"default engine: {section['default_engine']}",
            format_table(header, rows, left=1),
        ]
    )
