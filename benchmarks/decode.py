"""Decoding speed and memory: each beam, with the incremental cache and without it.

Every mode runs in a fresh process (workers.py), so the memory it reports is its own (memory.py):
the resident set right after the model is loaded, the peak while loading, and the peak while
decoding. On CUDA the same three come from `torch.cuda.memory_allocated` / `max_memory_allocated`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks import memory, workers
from benchmarks.options import Options
from benchmarks.tables import format_table
from seq2seq.batching import token_batches
from seq2seq.data.textio import read_lines
from seq2seq.run.layout import RunDir
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator

WARMUP_SENTENCES = 8  # decoded once, untimed, before the measured run
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
    beam: int
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


def memory_now_mib(device: torch.device) -> float:
    """CUDA memory allocated, or the resident set size now."""
    return torch.cuda.memory_allocated(device) / MIB if device.type == "cuda" else memory.own_rss_mib()


def memory_peak_mib(device: torch.device) -> float:
    """Peak CUDA memory allocated, or peak resident set size, since the last `reset_memory_peak`."""
    return torch.cuda.max_memory_allocated(device) / MIB if device.type == "cuda" else memory.own_peak_mib()


def reset_memory_peak(device: torch.device) -> str:
    """Restart the peak from the current usage; returns what later peaks cover: decode or process."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return "decode"
    return "decode" if memory.reset_peak() else "process"


def measure(raw: dict[str, Any]) -> dict[str, Any]:
    """The worker's side (workers.py): one decoding measurement of a `WorkerSpec` given as plain data."""
    return dataclasses.asdict(run_worker(WorkerSpec(**raw)))


def run_worker(spec: WorkerSpec) -> DecodeResult:
    """Load the run, decode a few sentences untimed and then all of them timed; measure memory."""
    if spec.threads:
        torch.set_num_threads(spec.threads)
    translator = Translator.load(spec.run_dir, ["best"], Placement(spec.device))
    device = translator.device
    after_load, load_peak = memory_now_mib(device), memory_peak_mib(device)
    peak_scope = reset_memory_peak(device)
    lines = source_lines(spec.src, spec.limit)
    lines = lines[: max(1, round(len(lines) * spec.fraction))]
    sources = [ids[: translator.max_source_tokens] for ids in translator.tokenizers.src.encode(lines)]
    settings = dataclasses.replace(
        translator.options(DecodeOverrides(beam=spec.beam)).search, use_cache=spec.use_cache
    )
    max_tokens = translator.config.decode.max_tokens

    def decode(batch: list[list[int]]) -> int:
        hyps = translator.decode_ids(batch, settings, max_tokens)
        return sum(len(nbest[0].tokens) for nbest in hyps)

    decode(sources[:WARMUP_SENTENCES])
    start = time.perf_counter()
    tokens = decode(sources)
    seconds = time.perf_counter() - start  # decode_ids returns host lists: the device is done
    return DecodeResult(
        search="greedy" if spec.beam == 1 else f"beam{spec.beam}",
        beam=spec.beam,
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
    """Run one measurement in a fresh worker process (the worker's own peak RSS is dropped: the
    decode peak, `peak_mib`, is the one that counts here)."""
    result = workers.spawn("decode", dataclasses.asdict(spec))
    del result["peak_rss_mib"]
    return DecodeResult(**result)


def worker_specs(base: WorkerSpec, beams: tuple[int, ...], fractions: tuple[float, ...]) -> list[WorkerSpec]:
    """Each beam cached and uncached on all sentences; the largest beam, cached, also on `fractions`."""
    modes = [(b, cache, 1.0) for b in beams for cache in (True, False)]
    modes += [(max(beams), True, f) for f in fractions]
    return [dataclasses.replace(base, beam=b, use_cache=c, fraction=f) for b, c, f in modes]


def check_decode_inputs(run_dir: str, src: str) -> None:
    """Raise `Seq2SeqError` now for a missing run, checkpoint or source file, not in a worker later."""
    run = RunDir(run_dir)
    run.load_config()
    run.checkpoint_path("best")
    source_lines(src, 1)


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every decoding mode in its own process; results and cached/uncached speed-ups as plain data."""
    assert opts.run_dir is not None  # options.parse insists
    check_decode_inputs(opts.run_dir, opts.src)
    src = opts.src
    count = len(source_lines(src, opts.limit))
    base = WorkerSpec(opts.run_dir, src, opts.limit, 1, True, 1.0, torch.get_num_threads(), str(device))
    results = [spawn_worker(spec) for spec in worker_specs(base, opts.beams, opts.fractions)]
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


def _row(r: dict[str, Any]) -> list[str]:
    return [
        r["search"],
        "yes" if r["use_cache"] else "no",
        str(r["sentences"]),
        str(r["batches"]),
        f"{r['seconds']:.2f}",
        f"{r['sentences_per_s']:.1f}",
        f"{r['tgt_tokens_per_s']:.0f}",
        f"{r['after_load_mib']:.0f}",
        f"{r['load_peak_mib']:.0f}",
        f"{r['peak_mib']:.0f}",
    ]


def report(section: dict[str, Any]) -> str:
    """The decode table, the cached / uncached ratios and the largest cached beam's peak as batches grow."""
    results = section["results"]
    header = ["search", "cache", "sents", "batches", "seconds", "sent/s", "tgt tok/s"]
    header += ["MiB loaded", "MiB load peak", "MiB decode peak"]
    ratios = ", ".join(f"{k} {v:.2f}x" for k, v in section["cached_over_uncached_sentences_per_s"].items())
    widest = max(results, key=lambda r: r["beam"])["search"]
    grown = [r for r in results if r["search"] == widest and r["use_cache"]]
    grown.sort(key=lambda r: r["fraction"])
    growth = ", ".join(f"{r['sentences']} sents/{r['batches']} batches {r['peak_mib']:.0f}" for r in grown)
    scope = "since the load" if results[0]["peak_scope"] == "decode" else "whole process"
    return "\n".join(
        [
            f"== decode ({section['sentences']} sentences of {section['src']}; "
            f"memory = {results[0]['memory']}, decode peak {scope})",
            format_table(header, [_row(r) for r in results], left=2),
            f"cached / uncached sent/s: {ratios}",
            f"{widest} cached decode peak MiB as batches grow: {growth}",
        ]
    )
