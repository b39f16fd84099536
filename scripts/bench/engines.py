"""Decoding side by side: s2s against CTranslate2 on the same weights, fp32 and int8, greedy and beam.

Exports the run's best checkpoint to CTranslate2 (float32 and int8) in a temporary directory, then
translates the same lines with each engine and setting (s2s also with `--precision auto`), each in
a fresh process (workers.py), one at a time, round-robin `--repeat` times (the fastest counts):
loading and a warm-up of 8 lines are not timed, then every line is. Reports sentences/s, the ratio
to CTranslate2 of the same weights, the worker's peak RSS (memory.py: its own VmHWM, loading
included) and BLEU (sacreBLEU, against `--ref`) for each.
"""

from __future__ import annotations

import importlib.util
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import sacrebleu
import torch

from scripts.bench import workers
from scripts.bench.options import Options

log = logging.getLogger(__name__)

# (engine, weights, s2s --precision): `auto` times fp32 against bf16 at start and keeps the faster
ENGINES = (
    ("s2s", None, "fp32"),
    ("s2s", None, "auto"),
    ("s2s", "int8", "fp32"),
    ("ctranslate2", None, "fp32"),
    ("ctranslate2", "int8", "fp32"),
)
WARMUP = 8


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    if importlib.util.find_spec("ctranslate2") is None:
        return "CTranslate2 is not installed here (pip install ctranslate2)"
    return None


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's side (workers.py): translate spec["src"] with one engine, write the output."""
    from seq2seq.ct2.engine import CT2Translator
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.translator import Translator

    torch.set_num_threads(spec["threads"])
    if spec["engine"] == "ctranslate2":
        placement = Placement("cpu", quantize=spec["quantize"])
        translator = CT2Translator.load(Path(spec["model"]), placement, spec["threads"])
        dtype = "float32"
    else:
        placement = Placement("cpu", spec["precision"], spec["quantize"])
        translator = Translator.load(spec["model"], ["best"], placement)
        dtype = str(translator.dtype or "float32").removeprefix("torch.")
    lines = _lines(spec["src"], spec["limit"])
    settings = translator.options(DecodeOverrides(beam=spec["beam"])).search
    budget = translator.config.decode.max_tokens
    translator.translate(lines[:WARMUP], settings, budget)
    start = time.perf_counter()
    out = translator.translate(lines, settings, budget)
    seconds = time.perf_counter() - start
    Path(spec["out"]).write_text("".join(t.texts[0] + "\n" for t in out), encoding="utf-8")
    return {"seconds": seconds, "dtype": dtype}


def _lines(path: str, limit: int) -> list[str]:
    """The lines of `path`, the first `limit` of them if `limit` > 0."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return lines[:limit] if limit > 0 else lines


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every engine and setting on the CPU; the device option does not apply (CTranslate2 runs here on
    the CPU only)."""
    assert opts.run_dir is not None  # options.parse insists
    threads = torch.get_num_threads()
    return run_engines_section(opts.run_dir, opts.src, opts.ref, opts.limit, threads, opts.beams, opts.repeat)


def run_engines_section(
    run_dir: str, src: str, ref: str | None, limit: int, threads: int, beams: tuple[int, ...], repeat: int
) -> dict[str, Any]:
    """Every engine and setting on the lines of `src`, round-robin `repeat` times; the fastest counts."""
    from seq2seq.ct2.export import export_ctranslate2

    count = len(_lines(src, limit))
    refs = _lines(ref, limit) if ref else None
    with tempfile.TemporaryDirectory() as scratch:
        exports = {}
        for quantize in (None, "int8"):
            exports[quantize] = Path(scratch) / f"ct2_{quantize or 'fp32'}"
            export_ctranslate2(Path(run_dir), "best", exports[quantize], quantize)
        best: dict[tuple[str, str | None, str, int], dict[str, Any]] = {}
        for _ in range(repeat):  # round-robin, so a noisy minute does not hit one setting only
            for beam in beams:
                for engine, quantize, precision in ENGINES:
                    setting = (engine, quantize, precision, beam)
                    spec = {"run_dir": run_dir, "src": src, "limit": limit, "threads": threads}
                    row = measure_setting(spec, setting, exports, Path(scratch), refs, count)
                    if setting not in best or row["sentences_per_s"] > best[setting]["sentences_per_s"]:
                        best[setting] = row
    rows = list(best.values())
    for row in rows:
        same = _ct2_row(rows, row["quantize"], row["beam"])
        row["vs_ctranslate2"] = row["sentences_per_s"] / same["sentences_per_s"]
        row["rss_vs_ctranslate2"] = row["peak_rss_mib"] / same["peak_rss_mib"]
    return {"sentences": count, "threads": threads, "results": rows}


def targets(section: dict[str, Any]) -> dict[str, float]:
    """Issue 11's decoding targets: speed and peak RSS against CTranslate2, int8's BLEU cost.

    The targets are stated for beam 5 and greedy; where those beams were not run there are none.
    """
    if not {1, 5} <= {r["beam"] for r in section["results"]}:
        return {}
    rows = {(r["engine"], r["quantize"], r["precision"], r["beam"]): r for r in section["results"]}
    out = {}
    for precision in ("fp32", "auto"):
        for beam in (5, 1):
            out[f"s2s {precision} / CT2 fp32, beam {beam}, sent/s"] = rows["s2s", None, precision, beam][
                "vs_ctranslate2"
            ]
    out["s2s int8 / CT2 int8, beam 5, sent/s"] = rows["s2s", "int8", "fp32", 5]["vs_ctranslate2"]
    for precision in ("fp32", "auto"):
        out[f"s2s {precision} / CT2 fp32, beam 5, peak RSS"] = rows["s2s", None, precision, 5][
            "rss_vs_ctranslate2"
        ]
    if "bleu" in rows["s2s", None, "fp32", 5]:
        out["s2s BLEU int8 - fp32, beam 5"] = (
            rows["s2s", "int8", "fp32", 5]["bleu"] - rows["s2s", None, "fp32", 5]["bleu"]
        )
    return out


def _ct2_row(rows: list[dict[str, Any]], quantize: str | None, beam: int) -> dict[str, Any]:
    """CTranslate2's row with the same weights and beam."""
    return next(
        r for r in rows if r["engine"] == "ctranslate2" and r["quantize"] == quantize and r["beam"] == beam
    )


def measure_setting(
    base: dict[str, Any],
    setting: tuple[str, str | None, str, int],
    exports: dict[str | None, Path],
    scratch: Path,
    refs: list[str] | None,
    count: int,
) -> dict[str, Any]:
    """One worker run of one setting (engine, weights, precision, beam): speed, peak memory, BLEU."""
    engine, quantize, precision, beam = setting
    out = scratch / f"{engine}_{quantize}_{precision}_{beam}.txt"
    spec = {
        "engine": engine,
        "quantize": quantize,
        "precision": precision,
        "model": str(exports[quantize] if engine == "ctranslate2" else base["run_dir"]),
        "src": base["src"],
        "limit": base["limit"],
        "beam": beam,
        "threads": base["threads"],
        "out": str(out),
    }
    log.info("%s %s beam %d", engine, quantize or precision, beam)
    row = {**spec, **workers.spawn("engine", spec)}
    row["sentences_per_s"] = round(count / row["seconds"], 1)
    if refs is not None:
        row["bleu"] = round(
            sacrebleu.corpus_bleu(out.read_text(encoding="utf-8").splitlines(), [refs]).score, 2
        )
    return row


def weights(row: dict[str, Any]) -> str:
    """int8, fp32, or `auto` with what it chose (bf16 or fp32)."""
    if row["quantize"]:
        return row["quantize"]
    chosen = {"bfloat16": "bf16", "float32": "fp32"}.get(row["dtype"], row["dtype"])
    return f"auto: {chosen}" if row["precision"] == "auto" else chosen


def report(section: dict[str, Any]) -> str:
    """The table: each engine and setting with sentences/s, its ratio to CTranslate2 on the same
    weights, peak RSS (and its ratio) and BLEU."""
    lines = [
        f"== engines: decoding against CTranslate2 ({section['sentences']} sentences, "
        f"{section['threads']} threads, "
        "each in a fresh process, the fastest of the rounds; peak RSS = the worker's own)",
        f"{'engine':<14}{'weights':<13}{'beam':>5}{'sent/s':>9}{'vs CT2':>8}{'peak RSS MiB':>13}{'vs CT2':>8}"
        f"{'BLEU':>7}",
    ]
    for row in section["results"]:
        lines.append(
            f"{row['engine']:<14}{weights(row):<13}{row['beam']:>5}{row['sentences_per_s']:>9}"
            f"{row['vs_ctranslate2']:>7.2f}x{row['peak_rss_mib']:>13.0f}{row['rss_vs_ctranslate2']:>7.2f}x"
            f"{row.get('bleu', ''):>7}"
        )
    return "\n".join(lines)
