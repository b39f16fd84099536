"""The steps of the GPU check: their budgets, the command each runs, and what its output and files say."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from benchmarks.gpu_check.check import RECIPE, Check, StepResult

# sizes (on the GPU, in the dry run) of the two training runs and the training benchmark
TRAIN_RUN = {
    "max_steps": (800, 4),
    "log_every": (100, 2),
    "max_tokens": (8192, 256),
    "max_minutes": (0.5, 0.5),
}
TEST_TIMEOUT_S = 60  # one CUDA test at most (pytest-timeout): a hung test fails alone
TORCHRUN = {"max_steps": (100, 2), "log_every": (25, 1), "max_tokens": (8192, 256), "max_minutes": (0.5, 0.5)}
BENCH_TRAIN = {"warmup": (10, 1), "steps": (40, 1), "matmul-size": (8192, 64)}
FIXED_SHAPES = 16  # bench_fixed: train.shape_multiple of the compiled base model (Multi30k: about 4 shapes)
DRY_MAX_TOKENS = 256  # the training benchmark's batches in the dry run (on the GPU: the recipe's)
RECIPE_MAX_TOKENS = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))["train"]["max_tokens"]


@dataclass(frozen=True)
class NotRun:
    """Why a step's command was not started; `failure` when that leaves the check incomplete."""

    note: str
    failure: bool = True


Command = list[str] | NotRun


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def train_command(check: Check, run: str, *sets: str) -> list[str]:
    """`s2s train` of the recipe into WORK/`run` in `check.precision`, validated once at the end, sized
    by `sets`."""
    command = python("-m", "seq2seq", "train", str(check.config), "--overwrite", "--device", check.device)
    fixed = (f"run_dir={check.work / run}", f"train.precision={check.precision}", "train.valid_every=1000000")
    for value in (*fixed, *sets):
        command += ["--set", value]
    return command


def machine_command(check: Check, done: dict[str, StepResult]) -> Command:
    call = f"describe({check.dry_run}, {str(check.work)!r})"
    return python("-c", f"from benchmarks.gpu_check.machine import describe; {call}")


def tests_command(check: Check, done: dict[str, StepResult]) -> Command:
    """pytest, verbose: each test's result is in the log as it ends, so a step stopped for time (with
    no JUnit file written) still says which passed, which failed and which was running. One test may
    take at most TEST_TIMEOUT_S where pytest-timeout is installed (it is on the GPU image).

    In one process (`-o addopts=` drops the project's `-n auto`): one CUDA context on the GPU, each
    module's fixtures made once, and the log in the plain `-v` form `read_verbose_tests` reads (a
    worker's lines name the test only once it has ended)."""
    junit = f"--junitxml={check.out / 'cuda_tests.xml'}"
    command = python(
        "-m", "pytest", "-v", "-m", "cuda", check.tests, "-p", "no:cacheprovider", "-o", "addopts=", junit
    )
    if importlib.util.find_spec("pytest_timeout") is not None:
        command.append(f"--timeout={TEST_TIMEOUT_S}")
    return command


def train_sets(check: Check, sizes: dict[str, tuple[Any, Any]]) -> list[str]:
    return [f"train.{key}={check.size(*value)}" for key, value in sizes.items()]


def train_run_command(check: Check, done: dict[str, StepResult]) -> Command:
    return train_command(check, "run", *train_sets(check, TRAIN_RUN))


def bench_train_command(check: Check, done: dict[str, StepResult]) -> Command:
    command = python("-m", "benchmarks", "--config", str(check.config), "--sections", "train")
    if (check.work / "run" / "tokenizer").is_dir():  # the short run's tokenizer: no second one to train
        command += ["--run-dir", str(check.work / "run")]
    command += ["--models", "recipe,base", "--device", check.device]
    command += [f"--{key}={check.size(*value)}" for key, value in BENCH_TRAIN.items()]
    return command + ["--json", str(check.out / "bench_train.json")]


def bench_fixed_command(check: Check, done: dict[str, StepResult]) -> Command:
    """The base model again beside itself compiled at fixed shapes (CUDA graphs on the GPU). The dry
    run leaves out the compiler (minutes of code generation on a CPU), not the batches or the tables."""
    command = python("-m", "benchmarks", "--config", str(check.config), "--sections", "train")
    if check.dry_run:
        command = ["env", "TORCHDYNAMO_DISABLE=1", *command]
    if (check.work / "run" / "tokenizer").is_dir():
        command += ["--run-dir", str(check.work / "run")]
    model = "recipe" if check.dry_run else "base"  # the dry run checks the step, not the base model's speed
    command += ["--models", model, "--device", check.device, f"--shape-multiple={FIXED_SHAPES}"]
    command += [f"--{key}={check.size(*value)}" for key, value in BENCH_TRAIN.items()]
    return command + ["--json", str(check.out / "bench_fixed.json")]


def bench_decode_command(check: Check, done: dict[str, StepResult]) -> Command:
    if not (check.work / "run" / "checkpoints" / "best.pt").is_file():
        return NotRun(f"needs the short training run's checkpoint; {check.work / 'run'} has none")
    command = python("-m", "benchmarks", "--run-dir", str(check.work / "run"), "--sections", "decode")
    command += ["--src", str(check.work / "data" / "test_2016_flickr.de"), "--beams", "5", "--fractions", ""]
    return command + ["--device", check.device, "--json", str(check.out / "bench_decode.json")]


def engines_command(check: Check, done: dict[str, StepResult]) -> Command:
    """Both engines forced on the device (`benchmarks.gpu_check.engines`), on the short run's checkpoint."""
    if not (check.work / "run" / "checkpoints" / "best.pt").is_file():
        return NotRun(f"needs the short training run's checkpoint; {check.work / 'run'} has none")
    data = check.work / "data"
    command = python("-m", "benchmarks.gpu_check.engines", str(check.work / "run"))
    command += [
        str(data / "test_2016_flickr.de"),
        str(data / "test_2016_flickr.en"),
        "--device",
        check.device,
    ]
    return command + ["--cache", str(check.work / "cache"), "--lines", str(check.size(0, 12))]


def read_engines(check: Check, output: str) -> dict[str, Any]:
    """The `ENGINES {json}` line the step prints."""
    found = [line for line in output.splitlines() if line.startswith("ENGINES ")]
    return {"engines": json.loads(found[-1].removeprefix("ENGINES "))} if found else {}


def torchrun_command(check: Check, done: dict[str, StepResult]) -> Command:
    gpus = done["machine"].numbers.get("gpus") if "machine" in done else None
    if check.dry_run or (gpus or 0) >= 2:
        launch = python("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
        return launch + train_command(check, "run_ddp", *train_sets(check, TORCHRUN))[1:]
    if gpus is None:
        return NotRun("the machine step did not count the GPUs: skipped", failure=False)
    return NotRun("one GPU: skipped" if gpus == 1 else f"{gpus} GPUs: skipped", failure=False)


def read_machine(check: Check, output: str) -> dict[str, Any]:
    path = check.work / "machine.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def read_tests(check: Check, output: str) -> dict[str, Any]:
    """The names of the tests that passed, failed (with their message) and skipped (with the reason)."""
    path = check.out / "cuda_tests.xml"
    if not path.is_file():
        return read_verbose_tests(output)
    outcome: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}".lstrip(":")
        bad = next((e for e in case if e.tag in ("failure", "error")), None)
        skip = case.find("skipped")
        if bad is not None:
            outcome["failed"].append(f"{name}: {first_line(bad.get('message', ''))}")
        elif skip is not None:
            outcome["skipped"].append(f"{name}: {first_line(skip.get('message', ''))}")
        else:
            outcome["passed"].append(name)
    return outcome


VERBOSE_LINE = re.compile(r"^\S*?([^/\s]+)\.py::(\S+)(?: (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b)?")


def read_verbose_tests(output: str) -> dict[str, Any]:
    """What pytest -v printed before it was stopped: each finished test's result, and the one running."""
    outcome: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    running = None
    for line in output.splitlines():
        match = VERBOSE_LINE.match(line)
        if match is None:
            continue
        name, result = f"{match[1]}::{match[2]}", match[3]
        running = None if result else name
        if result in ("PASSED", "XFAIL", "XPASS"):
            outcome["passed"].append(name)
        elif result in ("FAILED", "ERROR"):
            outcome["failed"].append(f"{name}: failed (see gpu_check.log)")
        elif result == "SKIPPED":
            outcome["skipped"].append(name)
    if running is not None:
        outcome["failed"].append(f"{running}: still running when the step's time ran out")
    return outcome if any(outcome.values()) else {}


def read_run(run: str, copy_to: str) -> Callable[[Check, str], dict[str, Any]]:
    """The run's metrics (copied under OUT): throughput after the first interval, the last validation."""

    def read(check: Check, output: str) -> dict[str, Any]:
        metrics = check.work / run / "metrics.jsonl"
        if not metrics.is_file():
            return {}
        (check.out / copy_to).write_bytes(metrics.read_bytes())
        records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        train = [r for r in records if r["kind"] == "train"]
        steady = train[1:] or train  # the first interval holds the start-up (CUDA context, allocator)
        valid = [r for r in records if r["kind"] == "valid"]
        lines = [line for line in output.splitlines() if "validation at step" in line]
        numbers: dict[str, Any] = {"steps": max((r["step"] for r in records), default=0)}
        if steady:
            numbers["tgt_tokens_per_s"] = round(sum(r["tgt_tokens_per_s"] for r in steady) / len(steady), 1)
            numbers["train_seconds"] = train[-1]["elapsed_s"]
        if valid:
            numbers |= {k: valid[-1][k] for k in ("valid_loss", "valid_bleu") if k in valid[-1]}
            numbers["valid_line"] = lines[-1][lines[-1].index("validation at step") :] if lines else ""
        return numbers

    return read


def read_json(name: str) -> Callable[[Check, str], dict[str, Any]]:
    def read(check: Check, output: str) -> dict[str, Any]:
        path = check.out / name
        return json.loads(path.read_text()) if path.is_file() else {}

    return read


def first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""


@dataclass(frozen=True)
class Step:
    """One step: its budget on the GPU and in the dry run, its command, and what its output says."""

    name: str
    budget_s: int
    dry_budget_s: int
    command: Callable[[Check, dict[str, StepResult]], Command]
    read: Callable[[Check, str], dict[str, Any]]


STEPS = (  # the GPU budgets add up to the 6.5 minutes; torchrun (two GPUs only) gets what is left
    Step("machine", 20, 30, machine_command, read_machine),
    Step("cuda_tests", 95, 120, tests_command, read_tests),
    Step("train_run", 65, 60, train_run_command, read_run("run", "train_metrics.jsonl")),
    Step("bench_train", 45, 60, bench_train_command, read_json("bench_train.json")),
    Step("bench_fixed", 90, 90, bench_fixed_command, read_json("bench_fixed.json")),
    Step("bench_decode", 45, 40, bench_decode_command, read_json("bench_decode.json")),
    Step("engines", 30, 40, engines_command, read_engines),
    Step("torchrun", 60, 60, torchrun_command, read_run("run_ddp", "torchrun_metrics.jsonl")),
)
STEP_NAMES = tuple(s.name for s in STEPS)
