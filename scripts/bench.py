#!/usr/bin/env python3
"""Benchmark s2s in one run: training throughput against plain nn.Transformer and fairseq, model FLOP/s,
decoding, and decoding against CTranslate2.

    python scripts/bench.py --config configs/multi30k_de_en.yaml --run-dir runs/multi30k_de_en \\
        --src data/multi30k/test_2016_flickr.de --ref data/multi30k/test_2016_flickr.en --json bench.json

Prints compact tables to stdout, then the targets of issue 11 as ratios, and writes every number to
`--json`. Absolute times on a shared machine are noisy; compare the ratios, which are measured side
by side in the same run. The `engines` section needs CTranslate2 (`pip install ctranslate2`), the
`fairseq` section an interpreter that imports fairseq (`--fairseq-python`); each is skipped, with a
note, when it is missing. The helpers live next to this file in bench_train.py, bench_decode.py,
bench_ct2.py and bench_fairseq.py (Python puts a script's own directory on sys.path).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import logging
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from bench_ct2 import engines_report, engines_targets, run_engines_section
from bench_decode import WorkerSpec, check_decode_inputs, run_decode_section, run_worker
from bench_fairseq import fairseq_report, fairseq_targets, find_fairseq, run_fairseq_section
from bench_train import MODEL_NAMES, run_train_section

from seq2seq.config import load_config
from seq2seq.device import resolve_device
from seq2seq.errors import Seq2SeqError

SECTIONS = ("train", "decode", "engines", "fairseq")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options; `--worker` is the hidden entry of one decode measurement."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[1], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--config", default="configs/multi30k_de_en.yaml", help="recipe for the train section")
    p.add_argument("--run-dir", help="trained run: its tokenizer for train, its best.pt for decode")
    p.add_argument("--src", default="data/multi30k/test_2016_flickr.de", help="source lines to decode")
    p.add_argument("--ref", help="references of --src: BLEU of each engine in the engines section")
    p.add_argument("--limit", type=int, default=0, help="decode only the first N lines (0 = all)")
    p.add_argument(
        "--sections",
        help="comma-separated: train,decode,engines,fairseq (default: train and fairseq; with --run-dir "
        "also decode and engines; engines and fairseq where installed)",
    )
    p.add_argument(
        "--repeat", type=int, default=3, help="engines: rounds over each setting (the fastest counts)"
    )
    p.add_argument("--fairseq-python", help="fairseq: a python that imports fairseq (default: this one)")
    p.add_argument("--fairseq-steps", type=int, default=80, help="fairseq: training steps of each trainer")
    p.add_argument("--models", default="recipe,base", help="comma-separated: recipe,base")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    p.add_argument("--warmup", type=int, default=3, help="training steps before the timed window")
    p.add_argument("--steps", type=int, default=10, help="timed training steps")
    p.add_argument("--matmul-size", type=int, default=2048, help="square matmul measuring peak FLOP/s")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--json", type=Path, help="write all results to this file")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # one decode measurement (JSON spec)
    return p.parse_args(argv)


def choices(value: str, valid: tuple[str, ...], option: str) -> list[str]:
    """Split a comma-separated option and check every item against `valid`."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in valid]
    if bad or not items:
        raise Seq2SeqError(f"{option}: {','.join(bad) or 'nothing'} given; choose from {','.join(valid)}")
    return items


def check_args(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """The sections to run, the models, and notes on optional sections skipped (what is missing).

    A user's mistake raises `Seq2SeqError` before any work.
    """
    default = "train,decode,engines,fairseq" if args.run_dir else "train,fairseq"
    sections = choices(args.sections or default, SECTIONS, "--sections")
    models = choices(args.models, MODEL_NAMES, "--models")
    if args.warmup < 0 or args.steps < 1 or args.limit < 0 or args.threads < 0 or args.matmul_size < 1:
        raise Seq2SeqError("--warmup, --limit, --threads must be >= 0; --steps, --matmul-size >= 1")
    if args.repeat < 1 or args.fairseq_steps < 8:
        raise Seq2SeqError("--repeat must be >= 1 and --fairseq-steps >= 8")
    if {"decode", "engines"} & set(sections):
        if not args.run_dir:
            raise Seq2SeqError("--sections decode/engines need --run-dir RUN (a trained run directory)")
        check_decode_inputs(args.run_dir, args.src)
    skipped = []
    if "engines" in sections and importlib.util.find_spec("ctranslate2") is None:
        skipped.append("engines: CTranslate2 is not installed here (pip install ctranslate2)")
    if "fairseq" in sections:
        args.fairseq_python = find_fairseq(args.fairseq_python)
        if args.fairseq_python is None:
            skipped.append("fairseq: this interpreter cannot import fairseq; give --fairseq-python PYTHON")
    sections = [s for s in sections if not any(note.startswith(f"{s}:") for note in skipped)]
    return sections, models, skipped


def machine_info(device: torch.device) -> dict[str, object]:
    """What the numbers were measured on, and when."""
    return {
        "cpu": cpu_model(),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "device": str(device),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, or what `platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def format_table(header: list[str], rows: list[list[str]], left: int) -> str:
    """Columns padded to their widest cell: the first `left` aligned left (text), the rest right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i < left else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    )


def _train_row(r: dict[str, Any]) -> list[str]:
    return [
        r["model"],
        r["impl"],
        r["dtype"],
        f"{r['params'] / 1e6:.1f}M",
        f"{r['sentences_per_batch']:.1f}",
        f"{r['padded_tokens_per_batch']:.0f}",
        f"{100 * r['padding']:.1f}",
        f"{r['tgt_tokens_per_s']:.0f}",
        f"{r['src_tgt_tokens_per_s']:.0f}",
        f"{r['flop_per_s'] / 1e9:.1f}",
        f"{100 * r['utilization']:.1f}",
    ]


def train_report(section: dict[str, Any]) -> str:
    """The train table, the matmul peaks and the s2s / nn.Transformer ratios."""
    header = ["model", "impl", "dtype", "params", "sent/batch", "tok/batch", "pad%", "tgt tok/s"]
    header += ["src+tgt tok/s", "GFLOP/s", "util%"]
    size = section["matmul_size"]
    peaks = ", ".join(f"{k} {v / 1e9:.1f}" for k, v in section["matmul_flop_per_s"].items())
    ratios = ", ".join(f"{k} {v:.2f}x" for k, v in section["s2s_over_reference_tgt_tokens_per_s"].items())
    return "\n".join(
        [
            f"== train ({section['sentences']} sentences; util% = model FLOP/s / matmul FLOP/s, same dtype)",
            format_table(header, [_train_row(r) for r in section["results"]], left=3),
            f"matmul {size}x{size} GFLOP/s: {peaks}",
            f"s2s / nn.Transformer tgt tok/s: {ratios}",
        ]
    )


def _decode_row(r: dict[str, Any]) -> list[str]:
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


def decode_report(section: dict[str, Any]) -> str:
    """The decode table, the cached / uncached ratios and the cached beam's peak as batches grow."""
    results = section["results"]
    header = ["search", "cache", "sents", "batches", "seconds", "sent/s", "tgt tok/s"]
    header += ["MiB loaded", "MiB load peak", "MiB decode peak"]
    ratios = ", ".join(f"{k} {v:.2f}x" for k, v in section["cached_over_uncached_sentences_per_s"].items())
    beam = sorted(
        (r for r in results if r["search"] != "greedy" and r["use_cache"]), key=lambda r: r["fraction"]
    )
    growth = ", ".join(f"{r['sentences']} sents/{r['batches']} batches {r['peak_mib']:.0f}" for r in beam)
    scope = "since the load" if results[0]["peak_scope"] == "decode" else "whole process"
    return "\n".join(
        [
            f"== decode ({section['sentences']} sentences of {section['src']}; "
            f"memory = {results[0]['memory']}, decode peak {scope})",
            format_table(header, [_decode_row(r) for r in results], left=2),
            f"cached / uncached sent/s: {ratios}",
            f"{beam[0]['search']} cached decode peak MiB as batches grow: {growth}",
        ]
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every requested section; prints the tables and returns all results as plain data."""
    sections, models, skipped = check_args(args)
    cfg = load_config(args.config) if "train" in sections else None
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    machine = machine_info(device)
    report: dict[str, Any] = {"machine": machine, "args": vars(args) | {"json": str(args.json)}}
    print(" | ".join(f"{k} {v}" for k, v in machine.items() if v is not None))
    if cfg is not None:
        train = run_train_section(
            cfg, args.run_dir, models, args.warmup, args.steps, device, args.matmul_size
        )
        report["train"] = train
        print(train_report(train), flush=True)
    if "decode" in sections:
        decode = run_decode_section(args.run_dir, args.src, args.limit, torch.get_num_threads(), args.device)
        report["decode"] = decode
        print(decode_report(decode), flush=True)
    threads = torch.get_num_threads()
    if "engines" in sections:
        engines = run_engines_section(args.run_dir, args.src, args.ref, threads, [1, 5], args.repeat)
        report["engines"] = engines
        print(engines_report(engines), flush=True)
    if "fairseq" in sections:
        fairseq = run_fairseq_section(args.config, args.fairseq_python, args.fairseq_steps, threads)
        report["fairseq"] = fairseq
        print(fairseq_report(fairseq), flush=True)
    report["skipped"] = skipped
    report["targets"] = targets(report)
    print(targets_report(report["targets"], skipped))
    return report


def targets(report: dict[str, Any]) -> dict[str, float]:
    """Issue 11's targets as measured ratios (of the sections that ran)."""
    out: dict[str, float] = {}
    if "engines" in report:
        out |= engines_targets(report["engines"])
    if "fairseq" in report:
        out |= fairseq_targets(report["fairseq"])
    return out


def targets_report(values: dict[str, float], skipped: list[str]) -> str:
    lines = ["== targets (issue 11)"]
    lines += [f"{name:<52}{value:>8.2f}{'' if 'BLEU' in name else 'x'}" for name, value in values.items()]
    lines += [f"skipped {note}" for note in skipped]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.worker else logging.INFO, format="%(message)s")
    try:
        if args.worker:
            print(json.dumps(asdict(run_worker(WorkerSpec(**json.loads(args.worker))))))
            return 0
        report = run(args)
    except Seq2SeqError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
