"""The engine a user gets by default, as the benchmarks measure it: `s2s translate RUN` with no flags.

That is `--engine auto` (`seq2seq.commands.engines.choose_engine`), on the CPU as a machine without a
GPU places it: CTranslate2 over the export cache's entry for the run (`seq2seq.ct2.export_cache`), made on
first use, where int8 or float32 and a shortlist are chosen on the run's val sample. Each benchmark
run points the cache at a fresh temporary directory (`cache_env`), so a first use is measured as a
new user meets it and no user's cache is read or written.

The engines section measures, each in a fresh worker process (workers.py):

- the first use: `choose_engine` with the cache empty (the export made, the choices checked), timed
  inside the worker and as the whole process (start, imports, exit), and what it decided;
- a later use: the same with the cache warm;
- the `default` rows: the cache warm, loading not timed, then the lines translated as every row's
  are (timed.py), in the arrangement the engine takes by itself.

Its worker imports torch only where the chosen engine does (s2s's decoder), as `s2s translate` does.

The serve section's default server reads such a cache too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import workers
from benchmarks.timed import timed

PEER = ("ct2 direct", "int8")  # what a default row's speed and memory are measured against
USES = ("first_use", "later_use")  # the cache empty, then warm


@contextlib.contextmanager
def cache_env(folder: Path) -> Iterator[None]:
    """The export cache at `folder` while inside, for this process and the ones it starts."""
    from seq2seq.ct2.export_cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def arrangement(cores: int) -> dict[str, int]:
    """The worker's cores, `at_once` x `each` (its OMP_NUM_THREADS, as a user's process limited to
    `cores` would have); the engine arranges its batches itself (its row records how: `at_once`
    calls, `max_tokens` per batch)."""
    return {"at_once": cores, "each": 1, "max_tokens": 0}


def choose(spec: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """`choose_engine(RUN, "auto")` on the CPU, at spec["beam"] (None: the run's), timed; the engine
    and what was chosen."""
    from seq2seq.commands.engines import choose_engine
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement

    start = time.perf_counter()
    chosen = choose_engine(
        Path(spec["run_dir"]), "auto", DecodeOverrides(beam=spec["beam"]), Placement("cpu")
    )
    seconds = time.perf_counter() - start
    described = chosen.engine.describe()
    return chosen, {
        "choose_seconds": round(seconds, 3),
        "chosen": chosen.name,
        "reason": chosen.reason,
        "dtype": str(described["precision"]),
        "shortlist": bool(described["shortlist"]),
        "at_once": chosen.engine.calls_at_once,
        "max_tokens": chosen.options.max_tokens,
    }


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's side: the engine chosen on spec["at_once"] x spec["each"] cores; with spec["out"],
    the lines of spec["src"] translated as `s2s translate` translates them (no scores) and timed."""
    os.environ.pop("MKL_NUM_THREADS", None)  # read before OMP_NUM_THREADS (`seq2seq.cpu`)
    os.environ["OMP_NUM_THREADS"] = str(spec["at_once"] * spec["each"])
    chosen, found = choose(spec)
    if "out" in spec:
        from seq2seq.translate.request import Request

        request = Request.of(chosen.options, scores=False)
        engine = chosen.engine
        found["seconds"] = timed(lambda lines: [t.texts[0] for t in engine.translate(lines, request)], spec)
    return found | {"imports_torch": "torch" in sys.modules}


def first_and_later_use(run_dir: str, cores: int) -> dict[str, Any]:
    """`choose_engine` in a fresh worker with the cache (`cache_env`) empty, then again with it warm:
    seconds inside and of the whole process, peak RSS; and what the first use recorded."""
    from seq2seq.ct2.export_cache import cached_export

    uses: dict[str, Any] = {}
    for use in USES:
        start = time.perf_counter()
        found = workers.spawn("default", {"run_dir": run_dir, "beam": None, **arrangement(cores)})
        uses[use] = found | {"process_seconds": round(time.perf_counter() - start, 2)}
    if uses["first_use"]["chosen"] == "ctranslate2":  # the cache's record: found, not made again
        uses["decisions"] = cached_export(Path(run_dir)).decisions
    return uses


def targets(section: dict[str, Any]) -> dict[str, float]:
    """The default's aims: at least 0.95x CTranslate2 direct in int8 at beam 5 and greedy (1.2x where
    the cache kept a shortlist: `+shortlist` in the name), and BLEU (on the lines translated, against
    --ref) within 0.2 of s2s's fp32 decoder at beam 5."""
    rows = {(r["engine"], r["quantize"], r["precision"], r["beam"]): r for r in section["results"]}
    out = {}
    for beam in (5, 1):
        if row := rows.get(("default", None, "auto", beam)):
            kept = "+shortlist" if row["shortlist"] else ""
            out[f"default{kept} / CT2 direct int8, beam {beam}, sent/s"] = row["vs_ctranslate2"]
            if impatient := rows.get(("ct2 patience 1", "int8", "fp32", beam)):
                speed = row["sentences_per_s"] / impatient["sentences_per_s"]
                out[f"default{kept} / CT2 direct int8 patience 1, beam {beam}, sent/s"] = speed
    default, own = rows.get(("default", None, "auto", 5)), rows.get(("s2s", None, "fp32", 5))
    if default and own and "bleu" in own:
        out["default BLEU - s2s fp32 BLEU, beam 5, --src lines"] = default["bleu"] - own["bleu"]
    return out


def report(section: dict[str, Any]) -> list[str]:
    """What the default chose and why, its first and later use, and what its rows are against."""
    uses = section["default"]
    first, later = uses["first_use"], uses["later_use"]
    lines = [f"default = `s2s translate RUN`, no flags: {first['chosen']} ({first['reason']})"]
    if decisions := uses.get("decisions"):
        from seq2seq.ct2.export_cache import describe

        val = decisions["val"]
        on = f" (val: {Path(val['src']).name})" if isinstance(val, dict) else ""
        lines.append(f"  decided on first use {describe(decisions)}{on}")
    for name, use in (("first use (cache empty)", first), ("later use (cache warm)", later)):
        lines.append(
            f"  {name}: choose_engine {use['choose_seconds']:.2f} s, whole process "
            f"{use['process_seconds']:.2f} s, peak RSS {use['peak_rss_mib']:.0f} MiB, "
            f"torch {'imported' if use['imports_torch'] else 'not imported'}"
        )
    lines.append("  its rows: vs CT2 = against CT2 direct int8; arranged by itself (calls at once, tokens)")
    return lines
