#!/usr/bin/env python3
"""The data path at scale: prepare time, time to the first training step, memory, one copy for 2 ranks.

    python scripts/bench_data.py --from ../shared/data/multi30k --work /tmp/s2s-bench-data

Makes two synthetic corpora from Multi30k's training set by repetition (by default 507,500 and
2,030,000 pairs; never committed), then for each runs, one command at a time, with the recipe's
model and tokenizer settings: the tokenizer stage (`s2s train --tokenizer-only`), `s2s prepare`, a
2-step `s2s train`, and a `--resume` for 2 more steps; on the large corpus also `torchrun
--nproc_per_node=2` (gloo, CPU) resuming it. Each command's peak RSS is its own (`wait4`), the time
to its first step is read from train.log, and while training runs /proc/PID/smaps is sampled for
the memory of the mapped corpus (Rss; Pss shares a page between the processes that map it). The
peak RSS of a command is GNU time's; the per-rank smaps peaks are sampled every 0.25 s.
Prints one table with both corpus sizes side by side and writes every number to `--json`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MB = 1e6
MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
STEP_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \| INFO \| seq2seq.training.trainer \| step (\d+) \|"
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--from", dest="source", default=str(ROOT.parent / "shared/data/multi30k"))
    p.add_argument("--work", default="/tmp/s2s-bench-data", help="corpora and runs go here")
    p.add_argument("--config", default=str(ROOT / "configs/multi30k_de_en.yaml"))
    p.add_argument("--pairs", type=int, nargs=2, default=[507_500, 2_030_000])
    p.add_argument("--no-ddp", action="store_true", help="skip the torchrun measurement")
    p.add_argument("--json", default="", help="write every number here")
    return p.parse_args()


def make_corpus(source: Path, target: Path, pairs: int) -> None:
    """`pairs` lines of each side of Multi30k train, repeated (made once, reused)."""
    target.mkdir(parents=True, exist_ok=True)
    for side in ("de", "en"):
        out = target / f"train.{side}"
        if out.is_file() and sum(1 for _ in out.open("rb")) == pairs:
            continue
        lines = (source / f"train.{side}").read_bytes().splitlines(keepends=True)
        with out.open("wb") as f:
            for i in range(0, pairs, len(lines)):
                f.writelines(lines[: min(len(lines), pairs - i)])


def write_config(args: argparse.Namespace, name: str, corpus: Path) -> Path:
    raw = yaml.safe_load(Path(args.config).read_text())
    work = Path(args.work)
    raw["run_dir"] = str(work / f"run_{name}")
    raw["data"] |= {
        "train_src": str(corpus / "train.de"),
        "train_tgt": str(corpus / "train.en"),
        "valid_src": str(Path(args.source) / "val.de"),
        "valid_tgt": str(Path(args.source) / "val.en"),
        "prepared_dir": str(work / f"prepared_{name}"),  # outside the run: shared by every run on it
    }
    raw["train"] |= {
        "max_steps": 2,
        "max_minutes": 0,
        "log_every": 1,
        "valid_every": 10**6,
        "valid_bleu": False,
        "best_metric": "loss",
        "valid_subset": 0,
    }
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


class SmapsSampler:
    """Samples /proc/PID/smaps of a process tree: peak Rss and Pss, total and of the corpus files."""

    def __init__(self, root_pid: int, corpus_dir: str) -> None:
        self.root, self.corpus_dir = root_pid, corpus_dir
        self.peaks: dict[int, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict[int, dict[str, float]]:
        self._stop.set()
        self._thread.join()
        return self.peaks

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            for pid in self._trainers():
                sample = self._sample(pid)
                if sample:
                    peak = self.peaks.setdefault(pid, {})
                    for key, value in sample.items():
                        peak[key] = max(peak.get(key, 0.0), value)

    def _trainers(self) -> list[int]:
        """Processes of the tree that run `python -m seq2seq` (torchrun's ranks, or the command)."""
        found, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            todo += map(int, children)
            runs_s2s = any(a == b"-m" and b == b"seq2seq" for a, b in zip(argv, argv[1:]))
            if runs_s2s and b"torch.distributed.run" not in argv and not argv[0].endswith(b"time"):
                found.append(pid)
        return found

    def _sample(self, pid: int) -> dict[str, float]:
        totals = {"rss": 0.0, "pss": 0.0, "private": 0.0, "corpus_rss": 0.0, "corpus_pss": 0.0}
        corpus = False
        try:
            text = Path(f"/proc/{pid}/smaps").read_text()
        except OSError:
            return {}
        for line in text.splitlines():
            if MAPPING.match(line):  # a mapping's header: address range, permissions, ..., path
                corpus = self.corpus_dir in line
                continue
            key, value = line.split()[:2]
            if key not in ("Rss:", "Pss:", "Private_Clean:", "Private_Dirty:"):
                continue
            mb = float(value) * 1024 / MB
            if key == "Rss:":
                totals["rss"] += mb
                totals["corpus_rss"] += mb if corpus else 0
            elif key == "Pss:":
                totals["pss"] += mb
                totals["corpus_pss"] += mb if corpus else 0
            else:
                totals["private"] += mb
        return totals


def run(cmd: list[str], run_dir: Path | None = None, corpus_dir: str = "") -> dict[str, Any]:
    """Run one command alone: wall seconds, peak RSS, time to its first step, smaps peaks of trainers.

    The peak RSS is GNU time's: the largest of the command and each of its children (workers, ranks).
    """
    log = run_dir / "train.log" if run_dir else None
    skip = len(log.read_text().splitlines()) if log and log.is_file() else 0
    start = time.time()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "MAXRSS_KB %M", *cmd],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sampler = SmapsSampler(proc.pid, corpus_dir) if corpus_dir else None
    out, err = proc.communicate()
    wall = time.time() - start
    if proc.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-3000:]}")
    kb = [line.split()[1] for line in err.splitlines() if line.startswith("MAXRSS_KB ")]
    result: dict[str, Any] = {"seconds": round(wall, 2), "peak_rss_mb": round(int(kb[-1]) * 1024 / MB)}
    if sampler is not None:
        result["smaps"] = [{k: round(v, 1) for k, v in peaks.items()} for peaks in sampler.stop().values()]
    if log is not None:
        result["first_step_s"] = first_step_seconds(log, skip, start)
    result["stdout"] = out
    return result


def first_step_seconds(log: Path, skip: int, start: float) -> float | None:
    """Seconds from the command's start to the first `step N |` line it logged (after line `skip`)."""
    for line in log.read_text().splitlines()[skip:]:
        if m := STEP_LINE.match(line):
            stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            return round(stamp - start, 2)
    return None


def main() -> None:
    args = parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    s2s = [sys.executable, "-m", "seq2seq"]
    results: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
    }
    for pairs in args.pairs:
        name = f"{pairs / 1e6:g}M"
        corpus = work / f"corpus_{name}"
        make_corpus(Path(args.source), corpus, pairs)
        config = write_config(args, name, corpus)
        cfg = yaml.safe_load(config.read_text())
        run_dir, prepared = Path(cfg["run_dir"]), cfg["data"]["prepared_dir"]
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(prepared, ignore_errors=True)
        r: dict[str, Any] = {"pairs": pairs, "text_mb": sum(p.stat().st_size for p in corpus.iterdir()) / MB}
        print(f"[{name}] tokenizer stage", file=sys.stderr)
        r["tokenizer"] = run([*s2s, "train", str(config), "--tokenizer-only"])
        print(f"[{name}] prepare", file=sys.stderr)
        r["prepare"] = run([*s2s, "prepare", str(config)])
        print(f"[{name}] train 2 steps", file=sys.stderr)
        r["train"] = run([*s2s, "train", str(config)], run_dir, prepared)
        print(f"[{name}] resume for 2 more", file=sys.stderr)
        r["resume"] = run(
            [*s2s, "train", str(config), "--resume", "--set", "train.max_steps=4"], run_dir, prepared
        )
        if pairs == max(args.pairs) and not args.no_ddp:
            print(f"[{name}] torchrun 2 ranks, resume for 20 more", file=sys.stderr)
            torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
            r["ddp"] = run(
                [
                    *torchrun,
                    "-m",
                    "seq2seq",
                    "train",
                    str(config),
                    "--resume",
                    "--device",
                    "cpu",
                    "--set",
                    "train.max_steps=24",
                    "--set",
                    "train.num_threads=1",
                ],
                run_dir,
                prepared,
            )
            r["index_private_mb"] = index_memory(Path(prepared), cfg["train"]["max_tokens"])
            r["prepared_mb"] = sum(p.stat().st_size for p in Path(prepared).glob("train.*")) / MB
        results[name] = r
    report(results, args)


def index_memory(prepared: Path, max_tokens: int) -> float:
    """Private memory one rank needs for the data besides the shared mapping: costs and batch order."""
    sys.path.insert(0, str(ROOT))
    from seq2seq.batching import shard_batches, token_batches
    from seq2seq.data.prepared import load_prepared

    data = load_prepared(prepared)
    tracemalloc.start()
    costs = data.costs()
    batches = shard_batches(token_batches(costs, max_tokens, 1, 0), 0, 2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del batches
    return round(peak / MB, 1)


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    names = [f"{pairs / 1e6:g}M" for pairs in args.pairs]
    rows = [
        ("text (MB)", lambda r: f"{r['text_mb']:.0f}"),
        ("tokenizer stage (s)", lambda r: f"{r['tokenizer']['seconds']:.1f}"),
        ("tokenizer stage peak RSS (MB)", lambda r: f"{r['tokenizer']['peak_rss_mb']}"),
        ("s2s prepare (s)", lambda r: f"{r['prepare']['seconds']:.1f}"),
        ("s2s prepare peak RSS (MB)", lambda r: f"{r['prepare']['peak_rss_mb']}"),
        ("train: start to first step (s)", lambda r: f"{r['train']['first_step_s']}"),
        ("train: peak RSS (MB)", lambda r: f"{r['train']['peak_rss_mb']}"),
        ("train: mapped corpus RSS (MB)", lambda r: f"{r['train']['smaps'][0]['corpus_rss']}"),
        ("resume: start to first step (s)", lambda r: f"{r['resume']['first_step_s']}"),
        ("resume: peak RSS (MB)", lambda r: f"{r['resume']['peak_rss_mb']}"),
    ]
    print(f"data path benchmark, {results['date']}, {results['machine']}")
    print(f"{'':<34}" + "".join(f"{n + ' pairs':>16}" for n in names) + f"{'ratio':>10}")
    for label, show in rows:
        values = [show(results[n]) for n in names]
        try:
            ratio = f"{float(values[-1]) / float(values[0]):.2f}x"
        except (ValueError, ZeroDivisionError):
            ratio = ""
        print(f"{label:<34}" + "".join(f"{v:>16}" for v in values) + f"{ratio:>10}")
    big = results[names[-1]]
    if "ddp" in big:
        ranks, index, corpus = big["ddp"]["smaps"], big["index_private_mb"], big["prepared_mb"]
        # the prepared arrays, once in the page cache, + what each process maps of them + its batch order
        data_one = corpus + max(r["corpus_rss"] for r in ranks) + index
        data_two = corpus + sum(r["corpus_pss"] for r in ranks) + len(ranks) * index
        print(f"\ntorchrun --nproc_per_node=2 on {names[-1]} pairs (gloo, CPU), per rank:")
        for i, r in enumerate(ranks):
            print(
                f"  rank {i}: RSS {r['rss']:.0f} MB, private {r['private']:.0f} MB, mapped corpus "
                f"RSS {r['corpus_rss']:.0f} MB / PSS {r['corpus_pss']:.0f} MB"
            )
        print(f"  start to first step: {big['ddp']['first_step_s']} s")
        print(
            f"  data memory: one rank {data_one:.0f} MB (the {corpus:.0f} MB of prepared arrays in the "
            f"page cache + the part it maps + {index:.0f} MB of index arrays); both ranks together "
            f"{data_two:.0f} MB (arrays once + mapped PSS summed + 2 x index) = {data_two / data_one:.2f}x"
        )
    if args.json:
        for r in (results[n] for n in names):
            for step in r.values():
                if isinstance(step, dict):
                    step.pop("stdout", None)
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
