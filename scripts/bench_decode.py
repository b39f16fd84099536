"""Decoding speed and memory: greedy and beam 5, with the incremental cache and without it.

Every mode runs in a fresh process (`bench.py --worker SPEC`, one JSON line out), so the peak
resident memory it reports is its own: the resident set right after the model is loaded, the peak
while loading, and the peak while decoding. On CUDA the same three come from
`torch.cuda.memory_allocated` / `max_memory_allocated`. Used by bench.py.
"""

from __future__ import annotations

import dataclasses
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seq2seq.batching import token_batches
from seq2seq.data.textio import read_lines
from seq2seq.decoding.bulk import decode_ids
from seq2seq.rundir import RunDir
from seq2seq.translate.translator import Translator

BEAM = 5
WARMUP_SENTENCES = 8  # decoded once, untimed, before the measured run
BENCH_SCRIPT = Path(__file__).with_name("bench.py")
MIB = 2**20


@dataclass(frozen=True)
class WorkerSpec:
    """One decoding measurement, passed to the worker process as JSON."""

    run_dir: str
    src: str
    limit: int  # first N non-empty lines (0 = all)
    beam: int
    use_cache: bool
    fraction: float  # decode only this leading share of the (limited) sentences
    threads: int  # 0 = torch's default
    device: str


@dataclass
class DecodeResult:
    search: str  # greedy | beam5
    use_cache: bool
    fraction: float
    sentences: int
    batches: int
    tgt_tokens: int  # tokens of the best hypotheses, <eos> not counted
    seconds: float
    sentences_per_s: float
    tgt_tokens_per_s: float
    memory: str  # rss (CPU) | cuda_allocated
    after_load_mib: float  # right after the model is loaded
    load_peak_mib: float  # the peak while loading (reading the checkpoint)
    peak_mib: float  # the peak while decoding, model included (nothing subtracted)
    peak_scope: str  # decode | process (where the peak could not be reset after the load)


def source_lines(path: str, limit: int) -> list[str]:
    """The non-empty lines of `path`, the first `limit` of them if `limit` > 0."""
    lines = [line for line in read_lines(path) if line.strip()]
    return lines[:limit] if limit > 0 else lines


def _proc_status_mib(field: str) -> float | None:
    """A kB field of /proc/self/status (VmRSS, VmHWM) in MiB; None where there is no /proc."""
    status = Path("/proc/self/status")
    if not status.is_file():
        return None
    for line in status.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return None


def memory_now_mib(device: torch.device) -> float:
    """CUDA memory allocated, or the resident set size now (the peak so far where there is no /proc)."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device) / MIB
    rss = _proc_status_mib("VmRSS")
    return rss if rss is not None else memory_peak_mib(device)


def memory_peak_mib(device: torch.device) -> float:
    """Peak CUDA memory allocated, or peak resident set size, since the last `reset_memory_peak`.

    On Linux this reads VmHWM rather than `ru_maxrss`: a child's ru_maxrss starts at the peak of
    the parent that spawned it (the image it replaced at exec), VmHWM only counts its own pages.
    """
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / MIB
    hwm = _proc_status_mib("VmHWM")
    if hwm is not None:
        return hwm
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / MIB if sys.platform == "darwin" else maxrss / 1024  # bytes on macOS, kB elsewhere


def reset_memory_peak(device: torch.device) -> str:
    """Restart the peak from the current usage; returns what later peaks cover: decode or process."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return "decode"
    try:
        Path("/proc/self/clear_refs").write_text("5")  # 5 = reset the peak RSS (VmHWM)
    except OSError:
        return "process"
    return "decode"


def run_worker(spec: WorkerSpec) -> DecodeResult:
    """Load the run, decode a few sentences untimed and then all of them timed; measure memory."""
    if spec.threads:
        torch.set_num_threads(spec.threads)
    translator = Translator.load(spec.run_dir, "best", spec.device)
    device = translator.device
    after_load, load_peak = memory_now_mib(device), memory_peak_mib(device)
    peak_scope = reset_memory_peak(device)
    lines = source_lines(spec.src, spec.limit)
    lines = lines[: max(1, round(len(lines) * spec.fraction))]
    sources = [ids[: translator.max_source_tokens] for ids in translator.tokenizers.src.encode(lines)]
    settings = translator.settings(beam=spec.beam, use_cache=spec.use_cache)
    max_tokens = translator.config.decode.max_tokens

    def decode(batch: list[list[int]]) -> int:
        hyps = decode_ids(translator.model, batch, settings, max_tokens, device, translator.dtype)
        return sum(len(nbest[0].tokens) for nbest in hyps)

    decode(sources[:WARMUP_SENTENCES])
    start = time.perf_counter()
    tokens = decode(sources)
    seconds = time.perf_counter() - start  # decode_ids returns host lists: the device is done
    return DecodeResult(
        search="greedy" if spec.beam == 1 else f"beam{spec.beam}",
        use_cache=spec.use_cache,
        fraction=spec.fraction,
        sentences=len(sources),
        batches=len(token_batches([len(s) + 1 for s in sources], max(max_tokens // spec.beam, 1))),
        tgt_tokens=tokens,
        seconds=round(seconds, 3),
        sentences_per_s=round(len(sources) / seconds, 2),
        tgt_tokens_per_s=round(tokens / seconds, 1),
        memory="cuda_allocated" if device.type == "cuda" else "rss",
        after_load_mib=round(after_load, 1),
        load_peak_mib=round(load_peak, 1),
        peak_mib=round(memory_peak_mib(device), 1),
        peak_scope=peak_scope,
    )


def spawn_worker(spec: WorkerSpec) -> DecodeResult:
    """Run one measurement in a fresh `bench.py --worker` process and read its JSON line."""
    command = [sys.executable, str(BENCH_SCRIPT), "--worker", json.dumps(dataclasses.asdict(spec))]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"decode worker failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return DecodeResult(**json.loads(done.stdout.strip().splitlines()[-1]))


def worker_specs(base: WorkerSpec) -> list[WorkerSpec]:
    """Greedy and beam, cached and uncached, on all sentences; cached beam also on the first 25%, 50%."""
    modes = [(1, True, 1.0), (1, False, 1.0), (BEAM, True, 1.0), (BEAM, False, 1.0)]
    modes += [(BEAM, True, 0.25), (BEAM, True, 0.5)]
    return [dataclasses.replace(base, beam=b, use_cache=c, fraction=f) for b, c, f in modes]


def check_decode_inputs(run_dir: str, src: str) -> None:
    """Raise `Seq2SeqError` now for a missing run, checkpoint or source file, not in a worker later."""
    run = RunDir(run_dir)
    run.load_config()
    run.checkpoint_path("best")
    source_lines(src, 1)


def run_decode_section(run_dir: str, src: str, limit: int, threads: int, device: str) -> dict[str, Any]:
    """Every decoding mode in its own process; results and cached/uncached speed-ups as plain data."""
    count = len(source_lines(src, limit))
    base = WorkerSpec(run_dir, src, limit, 1, True, 1.0, threads, device)
    results = [spawn_worker(spec) for spec in worker_specs(base)]
    rate = {(r.search, r.use_cache): r.sentences_per_s for r in results if r.fraction == 1.0}
    searches = dict.fromkeys(r.search for r in results)
    return {
        "src": src,
        "sentences": count,
        "results": [dataclasses.asdict(r) for r in results],
        "cached_over_uncached_sentences_per_s": {
            s: round(rate[s, True] / rate[s, False], 3) for s in searches
        },
    }
