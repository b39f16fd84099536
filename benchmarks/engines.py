"""Decoding side by side: s2s against CTranslate2 on the same weights, fp32 and int8, greedy and beam.

Exports the run's best checkpoint to CTranslate2 (float32 and int8) in a temporary directory. First a
grid finds each engine's best arrangement on this machine: batches decoded at once x threads per
batch (all the ways to fill the cores) x batch size in source tokens (`--grid-tokens`), timed at
beam 5 in fp32 on the first `GRID_LINES` lines. Then every setting translates the lines in its
engine's best arrangement, each in a fresh process (workers.py), round-robin `--repeat` times (the
fastest counts): loading and a warm-up of 8 lines are not timed, then every line is. The engines:

- `s2s`: s2s's own decoder (fp32, `--precision auto`, int8);
- `ctranslate2`: s2s's CTranslate2 engine (`s2s translate --engine ctranslate2`);
- `ct2 direct`: CTranslate2 called directly (ct2_direct.py): what the engine's overhead is measured
  against; `ct2 patience 1` the same with CTranslate2's default patience (1), which stops beam search
  sooner than the run's `decode.patience`, to show what the patience costs;
- `default`: what `s2s translate RUN` runs with no flags (default_engine.py), in the arrangement it
  takes by itself, over an export cache made fresh for this run; its first and later use too.

Reports sentences/s, the ratio to CTranslate2 (direct) of the same weights (int8 for `default`), the
worker's peak RSS (memory.py: its own VmHWM, loading included) and BLEU (sacreBLEU, against `--ref`,
on the lines translated) for each.
"""

from __future__ import annotations

import importlib.util
import logging
import tempfile
from pathlib import Path
from typing import Any

import sacrebleu
import torch

from benchmarks import ct2_direct, default_engine, workers
from benchmarks.options import Options
from benchmarks.timed import source_lines, timed

log = logging.getLogger(__name__)

# (engine, weights, s2s --precision): `auto` takes bf16 where the CPU's features say it is faster
ENGINES = (
    ("s2s", None, "fp32"),
    ("s2s", None, "auto"),
    ("s2s", "int8", "fp32"),
    ("ctranslate2", None, "fp32"),
    ("ctranslate2", "int8", "fp32"),
    ("ct2 direct", None, "fp32"),
    ("ct2 direct", "int8", "fp32"),
    (ct2_direct.IMPATIENT, "int8", "fp32"),
    ("default", None, "auto"),
)
# the worker task of an engine whose module imports no torch (timed.py); the others are "engine"
WORKERS = {"ct2 direct": "direct", ct2_direct.IMPATIENT: "direct", "default": "default"}
GRID_LINES = 300  # lines each grid point translates
GRID_BEAM = 5


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    if importlib.util.find_spec("ctranslate2") is None:
        return "CTranslate2 is not installed here (pip install ctranslate2)"
    return None


def arrangements(cores: int) -> list[tuple[int, int]]:
    """(batches at once, threads per batch) pairs that use all `cores`."""
    return [(n, cores // n) for n in range(1, cores + 1) if cores % n == 0]


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's side (workers.py) for s2s's engines: translate spec["src"] (timed.py)."""
    torch.set_num_threads(spec["at_once"] * spec["each"])
    translate, dtype = _through_s2s(spec)
    return {"seconds": timed(translate, spec), "dtype": dtype}


def _through_s2s(spec: dict[str, Any]) -> tuple[Any, str]:
    """`translate(lines) -> lines` with s2s's decoder or s2s's CTranslate2 engine, and the dtype used."""
    from seq2seq.ct2.runtime import CT2Translator, Threads
    from seq2seq.translate.engine import Engine
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.request import Request
    from seq2seq.translate.translator import Translator

    translator: Engine
    if spec["engine"] == "ctranslate2":
        placement = Placement("cpu", quantize=spec["quantize"])
        threads = Threads(spec["at_once"], spec["each"])
        translator = CT2Translator.load(Path(spec["model"]), placement, threads)
        dtype = "float32"
    else:
        own = Translator.load(spec["model"], ["best"], Placement("cpu", spec["precision"], spec["quantize"]))
        own.at_once = spec["at_once"]
        dtype = str(own.dtype or "float32").removeprefix("torch.")
        translator = own
    request = Request(translator.options(DecodeOverrides(beam=spec["beam"])).search, spec["max_tokens"])

    def translate(lines: list[str]) -> list[str]:
        # no scores asked, as `s2s translate` without --scores (and as CTranslate2 called directly)
        return [t.texts[0] for t in translator.translate(lines, request.replace(scores=False))]

    return translate, dtype


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Every engine and setting on the CPU; the device option does not apply (CTranslate2 runs here on
    the CPU only)."""
    assert opts.run_dir is not None  # options.parse insists
    cores = torch.get_num_threads()
    return run_engines_section(
        opts.run_dir, opts.src, opts.ref, opts.limit, cores, opts.beams, opts.repeat, opts.grid_tokens
    )


def run_engines_section(
    run_dir: str,
    src: str,
    ref: str | None,
    limit: int,
    cores: int,
    beams: tuple[int, ...],
    repeat: int,
    grid_tokens: tuple[int, ...] = (2000, 4000, 8000),
) -> dict[str, Any]:
    """The grid, the default's first and later use (an export cache made fresh for this run), then
    every engine and setting on the lines of `src`, round-robin `repeat` times."""
    from seq2seq.cpu import cpu_has_int8_dot_products
    from seq2seq.ct2.conversion import export_ctranslate2

    count = len(source_lines(src, limit))
    refs = source_lines(ref, limit) if ref else None
    with tempfile.TemporaryDirectory() as scratch, default_engine.cache_env(Path(scratch) / "cache"):
        exports = {}
        full_range = cpu_has_int8_dot_products()  # CTranslate2's own int8 where it is safe, as its users get
        for quantize in (None, "int8"):
            exports[quantize] = Path(scratch) / f"ct2_{quantize or 'fp32'}"
            export_ctranslate2(Path(run_dir), "best", exports[quantize], quantize, full_range)
        base = {"run_dir": run_dir, "src": src, "limit": limit}
        grid_base = base | {"limit": min(limit, GRID_LINES) if limit > 0 else GRID_LINES}
        grid = {
            engine: _grid(grid_base, engine, exports, Path(scratch), cores, grid_tokens)
            for engine in ("s2s", "ct2 direct")
        }
        grid["ctranslate2"] = grid["ct2 direct"]  # s2s's engine runs as CTranslate2 runs best
        grid[ct2_direct.IMPATIENT] = grid["ct2 direct"]
        grid["default"] = {"best": default_engine.arrangement(cores)}
        uses = default_engine.first_and_later_use(run_dir, cores)
        best: dict[tuple[str, str | None, str, int], dict[str, Any]] = {}
        for _ in range(repeat):  # round-robin, so a noisy minute does not hit one setting only
            for beam in beams:
                for engine, quantize, precision in ENGINES:
                    setting = (engine, quantize, precision, beam)
                    arranged = base | grid[engine]["best"]
                    row = measure_setting(arranged, setting, exports, Path(scratch), refs, count)
                    if setting not in best or row["sentences_per_s"] > best[setting]["sentences_per_s"]:
                        best[setting] = row
    rows = list(best.values())
    for row in rows:
        same = _peer_row(rows, row)
        row["vs_ctranslate2"] = row["sentences_per_s"] / same["sentences_per_s"]
        row["rss_vs_ctranslate2"] = row["peak_rss_mib"] / same["peak_rss_mib"]
    grids = {engine: grid[engine] for engine in ("s2s", "ct2 direct")}
    return {"sentences": count, "cores": cores, "ref": ref, "grid": grids, "results": rows, "default": uses}


def _grid(
    base: dict[str, Any],
    engine: str,
    exports: dict[str | None, Path],
    scratch: Path,
    cores: int,
    grid_tokens: tuple[int, ...],
) -> dict[str, Any]:
    """Every arrangement of `engine` at beam GRID_BEAM in fp32, timed once; the fastest is `best`."""
    points = []
    for at_once, each in arrangements(cores):
        for budget in grid_tokens:
            spec = base | {"at_once": at_once, "each": each, "max_tokens": budget}
            row = measure_setting(spec, (engine, None, "fp32", GRID_BEAM), exports, scratch, None, 0)
            points.append({"at_once": at_once, "each": each, "max_tokens": budget, "seconds": row["seconds"]})
    fastest = min(points, key=lambda p: p["seconds"])
    return {"points": points, "best": {k: fastest[k] for k in ("at_once", "each", "max_tokens")}}


def targets(section: dict[str, Any]) -> dict[str, float]:
    """The decoding targets: speed and peak RSS against CTranslate2 at its fastest, the engine's
    overhead, int8's BLEU cost, and the default's (default_engine.py). Stated for beam 5 and greedy;
    where those beams were not run there are none.
    """
    if not {1, 5} <= {r["beam"] for r in section["results"]}:
        return default_engine.targets(section)
    rows = {(r["engine"], r["quantize"], r["precision"], r["beam"]): r for r in section["results"]}
    out = {}
    for beam in (5, 1):
        fastest = max(
            rows["ct2 direct", None, "fp32", beam]["sentences_per_s"],
            rows["ct2 direct", "int8", "fp32", beam]["sentences_per_s"],
        )
        out[f"s2s auto / CT2 fastest, beam {beam}, sent/s"] = (
            rows["s2s", None, "auto", beam]["sentences_per_s"] / fastest
        )
        out[f"s2s int8 / CT2 int8, beam {beam}, sent/s"] = rows["s2s", "int8", "fp32", beam]["vs_ctranslate2"]
        for quantize in (None, "int8"):
            out[f"--engine ctranslate2 / CT2 direct, {quantize or 'fp32'}, beam {beam}, sent/s"] = rows[
                "ctranslate2", quantize, "fp32", beam
            ]["vs_ctranslate2"]
    for precision in ("fp32", "auto"):
        out[f"s2s {precision} / CT2 fp32, beam 5, peak RSS"] = rows["s2s", None, precision, 5][
            "rss_vs_ctranslate2"
        ]
    if "bleu" in rows["s2s", None, "fp32", 5]:
        out["s2s BLEU int8 - fp32, beam 5"] = (
            rows["s2s", "int8", "fp32", 5]["bleu"] - rows["s2s", None, "fp32", 5]["bleu"]
        )
        out["s2s BLEU - CT2 BLEU, fp32, beam 5"] = (
            rows["s2s", None, "fp32", 5]["bleu"] - rows["ct2 direct", None, "fp32", 5]["bleu"]
        )
    return out | default_engine.targets(section)


def _peer_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    """CTranslate2's (direct) row with the same weights and beam as `row`; for a default row, the one
    default_engine.PEER names."""
    engine, quantize = default_engine.PEER if row["engine"] == "default" else ("ct2 direct", row["quantize"])
    return next(r for r in rows if (r["engine"], r["quantize"], r["beam"]) == (engine, quantize, row["beam"]))


def measure_setting(
    base: dict[str, Any],
    setting: tuple[str, str | None, str, int],
    exports: dict[str | None, Path],
    scratch: Path,
    refs: list[str] | None,
    count: int,
) -> dict[str, Any]:
    """One worker run of one setting (engine, weights, precision, beam) in the arrangement `base` gives
    (at_once, each, max_tokens): speed, peak memory, BLEU."""
    engine, quantize, precision, beam = setting
    out = scratch / f"{engine.replace(' ', '_')}_{quantize}_{precision}_{beam}.txt"
    spec = {
        **base,
        "engine": engine,
        "quantize": quantize,
        "precision": precision,
        "model": str(base["run_dir"] if engine in ("s2s", "default") else exports[quantize]),
        "beam": beam,
        "out": str(out),
    }
    arranged = f"{spec['at_once']} x {spec['each']} threads, {spec['max_tokens'] or 'its own'} tokens"
    log.info("%s %s beam %d (%s)", engine, quantize or precision, beam, arranged)
    row = {**spec, **workers.spawn(WORKERS.get(engine, "engine"), spec)}
    if count:
        row["sentences_per_s"] = round(count / row["seconds"], 1)
    if refs is not None:
        row["bleu"] = round(
            sacrebleu.corpus_bleu(out.read_text(encoding="utf-8").splitlines(), [refs]).score, 2
        )
    return row


def weights(row: dict[str, Any]) -> str:
    """int8, fp32, or `auto` with what it chose (bf16 or fp32; the default: a compute type, and
    `+shortlist` where it decodes with one)."""
    if row["quantize"]:
        return row["quantize"]
    # int8_float32: CTranslate2's int8 weights, the rest in fp32
    names = {"bfloat16": "bf16", "float32": "fp32", "int8_float32": "int8"}
    chosen = names.get(row["dtype"], row["dtype"]) + ("+shortlist" if row.get("shortlist") else "")
    return f"auto: {chosen}" if row["precision"] == "auto" else chosen


def report(section: dict[str, Any]) -> str:
    """The grid of each engine, then the table: each engine and setting with sentences/s, its ratio to
    CTranslate2 (direct) on the same weights, peak RSS (and its ratio) and BLEU."""
    lines = [
        f"== engines: decoding against CTranslate2 ({section['sentences']} sentences, "
        f"{section['cores']} cores)"
    ]
    for engine, grid in section["grid"].items():
        points = ", ".join(
            f"{p['at_once']}x{p['each']} {p['max_tokens']}: {p['seconds']:.2f}s" for p in grid["points"]
        )
        chosen = grid["best"]
        lines.append(
            f"grid {engine} (batches at once x threads each, tokens per batch; beam {GRID_BEAM}, fp32): "
            f"{points}"
            f" -> {chosen['at_once']}x{chosen['each']} {chosen['max_tokens']}"
        )
    lines.append("each setting in a fresh process, the fastest of the rounds; peak RSS = the worker's own")
    bleu_on = f"; BLEU against {Path(section['ref']).name}" if section["ref"] else ""
    lines.append(f"{section['sentences']} lines of --src{bleu_on}")
    lines.append(
        f"{'engine':<16}{'weights':<22}{'beam':>5}{'sent/s':>9}{'vs CT2':>8}{'peak RSS MiB':>13}{'vs CT2':>8}"
        f"{'BLEU':>7}"
    )
    for row in section["results"]:
        lines.append(
            f"{row['engine']:<16}{weights(row):<22}{row['beam']:>5}{row['sentences_per_s']:>9}"
            f"{row['vs_ctranslate2']:>7.2f}x{row['peak_rss_mib']:>13.0f}{row['rss_vs_ctranslate2']:>7.2f}x"
            f"{row.get('bleu', ''):>7}"
        )
    return "\n".join(lines + default_engine.report(section))
