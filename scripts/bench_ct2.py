#!/usr/bin/env python3
"""Decoding side by side: s2s against CTranslate2 on the same weights, fp32 and int8, greedy and beam.

    python scripts/bench_ct2.py runs/multi30k_de_en --src data/multi30k/test_2016_flickr.de \\
        --ref data/multi30k/test_2016_flickr.en --threads 2

Exports the run's best checkpoint to CTranslate2 (float32 and int8) in a temporary directory, then
translates the same lines with each engine and setting (s2s also with `--precision auto`), each in
a fresh process (`--worker`), one at a time, round-robin --repeat times (the fastest counts):
loading and a warm-up of 8 lines are not timed, then every line is. Prints sentences/s, the ratio
to CTranslate2 of the same weights, peak RSS and BLEU (sacreBLEU, against --ref) for each, and
writes every number to --json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sacrebleu

# (engine, weights, s2s --precision): `auto` times fp32 against bf16 at start and keeps the faster
ENGINES = (
    ("s2s", None, "fp32"),
    ("s2s", None, "auto"),
    ("s2s", "int8", "fp32"),
    ("ctranslate2", None, "fp32"),
    ("ctranslate2", "int8", "fp32"),
)
WARMUP = 8


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("run_dir", nargs="?")
    p.add_argument("--src")
    p.add_argument("--ref")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--repeat", type=int, default=3, help="rounds over every setting; the fastest counts")
    p.add_argument("--json", default="")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    return p.parse_args()


def worker(spec: dict) -> None:
    """Translate spec["src"] with one engine; print {seconds, peak_rss_mb} as JSON; write the output."""
    import torch

    from seq2seq.ct2 import CT2Translator
    from seq2seq.translate import Translator

    torch.set_num_threads(spec["threads"])
    if spec["engine"] == "ctranslate2":
        translator = CT2Translator.load(Path(spec["model"]), "cpu", spec["quantize"], spec["threads"])
    else:
        translator = Translator.load(spec["model"], "best", "cpu", spec["precision"], spec["quantize"])
    lines = Path(spec["src"]).read_text(encoding="utf-8").splitlines()
    settings = translator.settings(beam=spec["beam"])
    budget = translator.config.decode.max_tokens
    translator.translate(lines[:WARMUP], settings, budget)
    start = time.perf_counter()
    out = translator.translate(lines, settings, budget)
    seconds = time.perf_counter() - start
    Path(spec["out"]).write_text("".join(t.texts[0] + "\n" for t in out), encoding="utf-8")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    dtype = str(getattr(translator, "dtype", None) or "float32").removeprefix("torch.")
    print(json.dumps({"seconds": seconds, "peak_rss_mb": round(peak), "dtype": dtype}))


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(json.loads(args.worker))
        return
    from seq2seq.export import export_ctranslate2

    lines = Path(args.src).read_text(encoding="utf-8").splitlines()
    refs = Path(args.ref).read_text(encoding="utf-8").splitlines() if args.ref else None
    with tempfile.TemporaryDirectory() as scratch:
        exports = {}
        for quantize in (None, "int8"):
            exports[quantize] = Path(scratch) / f"ct2_{quantize or 'fp32'}"
            export_ctranslate2(Path(args.run_dir), "best", exports[quantize], quantize)
        best: dict[tuple, dict] = {}
        for _ in range(args.repeat):  # round-robin, so a noisy minute does not hit one setting only
            for beam in args.beams:
                for engine, quantize, precision in ENGINES:
                    setting = (engine, quantize, precision, beam)
                    row = measure(args, setting, exports, Path(scratch), refs, len(lines))
                    key = setting
                    if key not in best or row["sentences_per_s"] > best[key]["sentences_per_s"]:
                        best[key] = row
        rows = list(best.values())
    report(rows, args, len(lines))


def measure(
    args: argparse.Namespace,
    setting: tuple,
    exports: dict,
    scratch: Path,
    refs: list[str] | None,
    count: int,
) -> dict:
    """One worker run of one setting (engine, weights, precision, beam): speed, peak memory, BLEU."""
    engine, quantize, precision, beam = setting
    out = scratch / f"{engine}_{quantize}_{precision}_{beam}.txt"
    spec = {
        "engine": engine,
        "quantize": quantize,
        "precision": precision,
        "model": str(exports[quantize] if engine == "ctranslate2" else args.run_dir),
        "src": args.src,
        "beam": beam,
        "threads": args.threads,
        "out": str(out),
    }
    print(f"{engine} {quantize or precision} beam {beam}", file=sys.stderr)
    done = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True, check=True
    )
    row = {**spec, **json.loads(done.stdout.strip().splitlines()[-1])}
    row["sentences_per_s"] = round(count / row["seconds"], 1)
    if refs is not None:
        row["bleu"] = round(
            sacrebleu.corpus_bleu(out.read_text(encoding="utf-8").splitlines(), [refs]).score, 2
        )
    return row


def weights(row: dict) -> str:
    """int8, fp32, or `auto` with what it chose (bf16 or fp32)."""
    if row["quantize"]:
        return row["quantize"]
    chosen = {"bfloat16": "bf16", "float32": "fp32"}.get(row["dtype"], row["dtype"])
    return f"auto: {chosen}" if row["precision"] == "auto" else chosen


def report(rows: list[dict], args: argparse.Namespace, count: int) -> None:
    print(
        f"decoding {count} sentences, {args.threads} threads, {datetime.date.today()}, {platform.processor()}"
    )
    print(f"{'engine':<14}{'weights':<13}{'beam':>5}{'sent/s':>9}{'vs CT2':>8}{'peak RSS MB':>13}{'BLEU':>7}")
    for row in rows:
        same = next(
            r
            for r in rows
            if r["engine"] == "ctranslate2" and r["quantize"] == row["quantize"] and r["beam"] == row["beam"]
        )
        ratio = row["sentences_per_s"] / same["sentences_per_s"]
        print(
            f"{row['engine']:<14}{weights(row):<13}{row['beam']:>5}{row['sentences_per_s']:>9}"
            f"{ratio:>7.2f}x{row['peak_rss_mb']:>13}{row.get('bleu', ''):>7}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
