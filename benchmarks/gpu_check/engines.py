"""Both engines on one device: s2s's own decoder and CTranslate2 (its export made into a cache under
the check's work directory) translate the test set at beam 5; sentences/s and BLEU of each, side by
side in one process. What `--engine auto` on a GPU is to be decided from: it keeps s2s's decoder there
until this has measured both.

    python -m benchmarks.gpu_check.engines RUN_DIR SRC REF --device cuda --cache DIR [--lines N]

Prints one line `ENGINES {json}` at the end (the check's step reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

WARMUP = 16  # lines translated before the timing: CUDA's and CTranslate2's start-up is not timed


def measure(run: Path, lines: list[str], refs: list[str], device: str, engine: str) -> dict[str, object]:
    """One engine forced (`--engine`) on `device`: load seconds, decode sentences/s and BLEU."""
    import sacrebleu

    from seq2seq.commands.engines import choose_engine
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.request import Request

    start = time.perf_counter()
    chosen = choose_engine(run, engine, DecodeOverrides(beam=5), Placement(device))
    loaded = time.perf_counter() - start
    request = Request.of(chosen.options, scores=False)
    chosen.engine.translate(lines[:WARMUP], request)
    start = time.perf_counter()
    texts = [t.texts[0] for t in chosen.engine.translate(lines, request)]
    seconds = time.perf_counter() - start
    return {
        "engine": engine,
        **chosen.engine.describe(),
        "load_s": round(loaded, 2),
        "sentences": len(lines),
        "seconds": round(seconds, 2),
        "sentences_per_s": round(len(lines) / seconds, 1),
        "bleu": round(sacrebleu.corpus_bleu(texts, [refs]).score, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("src", type=Path)
    parser.add_argument("ref", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cache", type=Path, required=True, help="the export cache (S2S_CACHE_DIR)")
    parser.add_argument("--lines", type=int, default=0, help="the first N lines only (0: all)")
    args = parser.parse_args()
    os.environ["S2S_CACHE_DIR"] = str(args.cache)
    lines = args.src.read_text(encoding="utf-8").splitlines()
    refs = args.ref.read_text(encoding="utf-8").splitlines()
    if args.lines:
        lines, refs = lines[: args.lines], refs[: args.lines]
    rows = [measure(args.run, lines, refs, args.device, engine) for engine in ("s2s", "ctranslate2")]
    ratio = rows[1]["sentences_per_s"] / rows[0]["sentences_per_s"]  # type: ignore[operator]
    print("ENGINES " + json.dumps({"device": args.device, "results": rows, "ct2_over_s2s": round(ratio, 2)}))


if __name__ == "__main__":
    main()
