"""`python3 -m benchmarks.gpu_check`: parse, check the data, prepare the work directory, run every step."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

import benchmarks.gpu_check
from benchmarks.gpu_check.check import MULTI30K, RECIPE, Check, StepResult, UsageError
from benchmarks.gpu_check.process import run_step
from benchmarks.gpu_check.steps import DRY_MAX_TOKENS, STEP_NAMES, STEPS
from benchmarks.gpu_check.summary import write_results
from seq2seq.config.bounds import MAX_SECONDS
from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs

DRY_LINES = {"train": 1000, "val": 16, "test_2016_flickr": 4}  # the dry run's share of each file
# all it writes to --out
OUT_FILES: tuple[str, ...] = ("summary.md", "steps.json", "gpu_check.log", "cuda_tests.xml")
OUT_FILES += (
    "bench_train.json",
    "bench_fixed.json",
    "bench_decode.json",
    "train_metrics.jsonl",
    "torchrun_metrics.jsonl",
)
DRY_TOKENIZER = 400  # vocabulary of the dry run's 1,000 training pairs
DRY_DECODE = {"max_len_a": 0.0, "max_len_b": 8}  # the untrained dry-run model writes to the length limit
SUMMARY = benchmarks.gpu_check.__doc__.split("\n\n")[0]  # --help's first line: what the check does


def parse(argv: list[str] | None) -> Check:
    p = argparse.ArgumentParser(prog="bash scripts/gpu_check.sh", description=SUMMARY)
    p.add_argument("data", nargs="?", help="the Multi30k directory (train, val, test_2016_flickr .de/.en)")
    p.add_argument("--data", dest="data_option", help="the same, as an option")
    p.add_argument("--dry-run", action="store_true", help="the same steps on the CPU, tiny, no CUDA call")
    p.add_argument("--out", help="where the results go (default: /tmp/gpu_check)")
    p.add_argument("--work", help="runs and scratch (default: TMPDIR/gpu_check_work)")
    p.add_argument(
        "--steps", default=",".join(STEP_NAMES), help=f"comma-separated, of {','.join(STEP_NAMES)}"
    )
    p.add_argument(
        "--tests", default="tests/system/test_cuda.py", help="the CUDA tests (from the repository)"
    )
    p.add_argument("--budget", type=float, default=390.0, help="seconds for the whole check")
    a = p.parse_args(argv)
    steps = tuple(s.strip() for s in a.steps.split(",") if s.strip())
    if not steps or set(steps) - set(STEP_NAMES):
        raise UsageError(f"--steps: {a.steps!r}; choose from {','.join(STEP_NAMES)}")
    if not 0 < a.budget <= MAX_SECONDS:  # NaN too: a deadline of NaN never comes
        raise UsageError(f"--budget {a.budget}: seconds for the whole check, in (0, {MAX_SECONDS:g}]")
    data = a.data_option or a.data
    if not data:
        raise UsageError("give the Multi30k directory: bash scripts/gpu_check.sh --data data/multi30k")
    out = Path(a.out or "/tmp/gpu_check").resolve()
    work = Path(a.work or Path(tempfile.gettempdir()) / "gpu_check_work").resolve()
    check = Check(Path(data).resolve(), out, work, a.dry_run, a.tests, steps, a.budget)
    check_multi30k(check.data)
    check_places(check)
    return check


def check_places(check: Check) -> None:
    """Neither --work (whose data/ gets the Multi30k lines, whose runs are replaced) nor --out may be
    or lie in what the check reads, nor hold it: the Multi30k files, the tests, the recipe."""
    reads = {"--data": check.data, "--tests": Path(check.tests), "the recipe": RECIPE}
    try:
        check_outputs({}, reads, {"--work": check.work, "--out": check.out})
    except Seq2SeqError as e:
        raise UsageError(str(e)) from None


def check_multi30k(data: Path) -> None:
    """Refuse a directory without Multi30k's six files, saying how to get them."""
    missing = [name for name in MULTI30K if not (data / name).is_file() or (data / name).stat().st_size == 0]
    if missing:
        raise UsageError(
            f"{data} holds no Multi30k (missing or empty: {', '.join(missing)}); fill data/multi30k with "
            "scripts/fetch_multi30k.sh [--from DIR], then pass --data data/multi30k"
        )


def prepare_work(check: Check) -> None:
    """WORK/data (the dry run: the first lines of each file) and WORK/recipe.yaml reading it."""
    (check.work / "data").mkdir(parents=True, exist_ok=True)
    for name in MULTI30K:
        lines = (check.data / name).read_text(encoding="utf-8").splitlines(keepends=True)
        keep = DRY_LINES[name.rsplit(".", 1)[0]] if check.dry_run else len(lines)
        (check.work / "data" / name).write_text("".join(lines[:keep]), encoding="utf-8")
    cfg = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    sides = {"train_src": "train.de", "train_tgt": "train.en", "valid_src": "val.de", "valid_tgt": "val.en"}
    cfg["data"] |= {key: str(check.work / "data" / name) for key, name in sides.items()}
    cfg["run_dir"], cfg["train"]["precision"] = str(check.work / "run"), check.precision
    if check.dry_run:
        cfg["tokenizer"]["vocab_size"], cfg["train"]["max_tokens"] = DRY_TOKENIZER, DRY_MAX_TOKENS
        cfg["decode"] |= DRY_DECODE
    check.config.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    check.out.mkdir(parents=True, exist_ok=True)
    for name in OUT_FILES:  # no result of an earlier check is taken for this one's
        (check.out / name).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """0 when every step passed or was skipped by design, 1 when one did not, 2 for a usage mistake."""
    try:
        check = parse(argv)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        prepare_work(check)
    except (OSError, UnicodeDecodeError) as e:
        print(f"error: could not prepare {check.work} and {check.out}: {e}", file=sys.stderr)
        return 2
    deadline = time.monotonic() + check.budget_s
    results: dict[str, StepResult] = {}
    print(f"== GPU check{' (dry run)' if check.dry_run else ''}: results in {check.out}", flush=True)
    for step in STEPS:
        results[step.name] = run_step(step, check, results, deadline)
        r = results[step.name]
        print(f"== {r.name}: {r.status} {r.seconds:g} s" + (f" ({r.note})" if r.note else ""), flush=True)
        write_results(check, results)
    print((check.out / "summary.md").read_text(encoding="utf-8"))
    failed = [r.name for r in results.values() if r.failed]
    print(f"== failed: {', '.join(failed)}" if failed else "== every step passed or was skipped", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
