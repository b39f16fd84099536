"""The data path at scale: prepare time, time to the first training step, memory, one copy for 2 ranks.

Makes synthetic corpora from the recipe's training set by repetition (by default 507,500 and
2,030,000 pairs; never committed), then for each runs, one command at a time, with the recipe's
model and tokenizer settings: the tokenizer stage (`s2s train --tokenizer-only`), `s2s prepare`, a
2-step `s2s train`, and a `--resume` for 2 more steps; on the largest corpus also `torchrun
--nproc_per_node=2` (gloo, CPU) resuming it. Each command's peak RSS is its main process's own
(memory.py; not its worker processes or ranks), the time to its first step is read from
train.log, and while training runs /proc/PID/smaps is sampled every 0.25 s for the memory of the
mapped corpus (Rss; Pss shares a page between the processes that map it).
"""

from __future__ import annotations

import datetime
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import torch
import yaml

from benchmarks import memory
from benchmarks.options import Options
from benchmarks.workers import ROOT
from seq2seq.batching import shard_batches, token_batches
from seq2seq.config import Config, load_config
from seq2seq.data.prepared import load_prepared_part

MB = 1e6
MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
STEP_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \| INFO \| seq2seq.training.trainer \| step (\d+) \|"
)


def make_corpus(sources: tuple[str, ...], out: Path, pairs: int) -> None:
    """`pairs` lines of the files `sources` (concatenated), repeated (made once, reused)."""
    if out.is_file() and sum(1 for _ in out.open("rb")) == pairs:
        return
    lines = [line for path in sources for line in Path(path).read_bytes().splitlines(keepends=True)]
    with out.open("wb") as f:
        for i in range(0, pairs, len(lines)):
            f.writelines(lines[: min(len(lines), pairs - i)])


def write_config(config: str, cfg: Config, work: Path, name: str, corpus: Path) -> Path:
    """The recipe on corpus `corpus`, a 2-step run in `work`; returns the new config's path."""
    raw = yaml.safe_load(Path(config).read_text())
    raw["run_dir"] = str(work / f"run_{name}")
    raw["data"] |= {
        "train_src": str(corpus / "train.src"),
        "train_tgt": str(corpus / "train.tgt"),
        "valid_src": str(Path(cfg.data.valid_src).resolve()),
        "valid_tgt": str(Path(cfg.data.valid_tgt).resolve()),
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
            if b"seq2seq" in argv and b"torch.distributed.run" not in argv:  # the command, or a rank
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


def run_command(
    module: str, args: list[str], run_dir: Path | None = None, corpus_dir: str = ""
) -> dict[str, Any]:
    """Run `python -m module args` alone: wall seconds, its peak RSS, time to its first step, and the
    smaps peaks of the trainer processes (the command or its ranks)."""
    log = run_dir / "train.log" if run_dir else None
    skip = len(log.read_text().splitlines()) if log and log.is_file() else 0
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        command = memory.measured_command(sys.executable, module, args, peak_file)
        start = time.time()
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = SmapsSampler(proc.pid, corpus_dir) if corpus_dir else None
        out, err = proc.communicate()
        wall = time.time() - start
        if proc.returncode:
            raise RuntimeError(f"failed: python -m {module} {' '.join(args)}\n{err[-3000:]}")
        result: dict[str, Any] = {"seconds": round(wall, 2), "peak_rss_mib": memory.read_peak(peak_file)}
    if sampler is not None:
        result["smaps"] = [{k: round(v, 1) for k, v in peaks.items()} for peaks in sampler.stop().values()]
    if log is not None:
        result["first_step_s"] = first_step_seconds(log, skip, start)
    return result


def first_step_seconds(log: Path, skip: int, start: float) -> float | None:
    """Seconds from the command's start to the first `step N |` line it logged (after line `skip`)."""
    for line in log.read_text().splitlines()[skip:]:
        if m := STEP_LINE.match(line):
            stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            return round(stamp - start, 2)
    return None


def run_corpus(opts: Options, cfg: Config, work: Path, pairs: int, ddp: bool) -> dict[str, Any]:
    """Every command on one corpus of `pairs` pairs."""
    name = f"{pairs / 1e6:g}M"
    corpus = work / f"corpus_{name}"
    corpus.mkdir(parents=True, exist_ok=True)
    make_corpus(cfg.data.train_src, corpus / "train.src", pairs)
    make_corpus(cfg.data.train_tgt, corpus / "train.tgt", pairs)
    config = str(write_config(opts.config, cfg, work, name, corpus))
    run_dir, prepared = work / f"run_{name}", str(work / f"prepared_{name}")
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.rmtree(prepared, ignore_errors=True)
    r: dict[str, Any] = {"pairs": pairs, "text_mb": sum(p.stat().st_size for p in corpus.iterdir()) / MB}
    r["tokenizer"] = run_command("seq2seq", ["train", config, "--tokenizer-only"])
    r["prepare"] = run_command("seq2seq", ["prepare", config])
    r["train"] = run_command("seq2seq", ["train", config], run_dir, prepared)
    more = ["--resume", "--set", "train.max_steps=4"]
    r["resume"] = run_command("seq2seq", ["train", config, *more], run_dir, prepared)
    if ddp:
        ranks = ["--standalone", "--nproc_per_node=2", "-m", "seq2seq", "train", config, "--resume"]
        ranks += ["--device", "cpu", "--set", "train.max_steps=24", "--set", "train.num_threads=1"]
        r["ddp"] = run_command("torch.distributed.run", ranks, run_dir, prepared)
        r["index_private_mb"] = index_memory(Path(prepared), cfg.train.max_tokens)
        r["prepared_mb"] = sum(p.stat().st_size for p in Path(prepared).glob("*/train.*")) / MB
    return r


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every corpus size, smallest first, in `--work` or a temporary directory (CPU commands)."""
    cfg = load_config(opts.config)
    results: dict[str, Any] = {"date": datetime.date.today().isoformat(), "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="s2s-bench-data-") as scratch:
        work = Path(opts.work or scratch).resolve()
        work.mkdir(parents=True, exist_ok=True)
        for pairs in sorted(opts.pairs):
            ddp = opts.ddp and pairs == max(opts.pairs)
            results["sizes"][f"{pairs / 1e6:g}M"] = run_corpus(opts, cfg, work, pairs, ddp)
    return results


def index_memory(prepared: Path, max_tokens: int) -> float:
    """Private memory one rank needs for the data besides the shared mapping: costs and batch order."""
    data = load_prepared_part(prepared / "train")
    tracemalloc.start()
    costs = data.costs()
    batches = shard_batches(token_batches(costs, max_tokens, 1, 0), 0, 2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del batches
    return round(peak / MB, 1)


def _corpus_rss(step: dict[str, Any]) -> str:
    """The mapped corpus's sampled RSS of the first trainer, or `-` if the run ended before a sample."""
    return f"{step['smaps'][0]['corpus_rss']}" if step["smaps"] else "-"


ROWS = [
    ("text (MB)", lambda r: f"{r['text_mb']:.0f}"),
    ("tokenizer stage (s)", lambda r: f"{r['tokenizer']['seconds']:.1f}"),
    ("tokenizer stage peak RSS (MiB)", lambda r: f"{r['tokenizer']['peak_rss_mib']:.0f}"),
    ("s2s prepare (s)", lambda r: f"{r['prepare']['seconds']:.1f}"),
    ("s2s prepare peak RSS (MiB)", lambda r: f"{r['prepare']['peak_rss_mib']:.0f}"),
    ("train: start to first step (s)", lambda r: f"{r['train']['first_step_s']}"),
    ("train: peak RSS (MiB)", lambda r: f"{r['train']['peak_rss_mib']:.0f}"),
    ("train: mapped corpus RSS (MB)", lambda r: _corpus_rss(r["train"])),
    ("resume: start to first step (s)", lambda r: f"{r['resume']['first_step_s']}"),
    ("resume: peak RSS (MiB)", lambda r: f"{r['resume']['peak_rss_mib']:.0f}"),
]


def report(results: dict[str, Any]) -> str:
    """One table with the corpus sizes side by side, then the torchrun ranks where they ran."""
    sizes = results["sizes"]
    lines = [f"== data path ({results['date']}; peak RSS = each command's main process)"]
    lines.append(f"{'':<34}" + "".join(f"{n + ' pairs':>16}" for n in sizes) + f"{'ratio':>10}")
    for label, show in ROWS:
        values = [show(r) for r in sizes.values()]
        try:
            ratio = f"{float(values[-1]) / float(values[0]):.2f}x"
        except (ValueError, ZeroDivisionError):
            ratio = ""
        lines.append(f"{label:<34}" + "".join(f"{v:>16}" for v in values) + f"{ratio:>10}")
    name, big = list(sizes.items())[-1]
    if "ddp" in big:
        lines += _ddp_report(name, big)
    return "\n".join(lines)


def _ddp_report(name: str, big: dict[str, Any]) -> list[str]:
    ranks, index, corpus = big["ddp"]["smaps"], big["index_private_mb"], big["prepared_mb"]
    lines = [f"torchrun --nproc_per_node=2 on {name} pairs (gloo, CPU), per rank:"]
    for i, r in enumerate(ranks):
        lines.append(
            f"  rank {i}: RSS {r['rss']:.0f} MB, private {r['private']:.0f} MB, mapped corpus "
            f"RSS {r['corpus_rss']:.0f} MB / PSS {r['corpus_pss']:.0f} MB"
        )
    lines.append(f"  start to first step: {big['ddp']['first_step_s']} s")
    if ranks:
        # the prepared arrays, once in the page cache, + what each process maps of them + its batch order
        data_one = corpus + max(r["corpus_rss"] for r in ranks) + index
        data_two = corpus + sum(r["corpus_pss"] for r in ranks) + len(ranks) * index
        lines.append(
            f"  data memory: one rank {data_one:.0f} MB (the {corpus:.0f} MB of prepared arrays in the "
            f"page cache + the part it maps + {index:.0f} MB of index arrays); both ranks together "
            f"{data_two:.0f} MB (arrays once + mapped PSS summed + 2 x index) = {data_two / data_one:.2f}x"
        )
    return lines
