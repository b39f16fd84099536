"""How a worker of the engines section times one engine: loaded first, then a warm-up of `WARMUP`
lines, not timed, then every line, timed; the translations written for BLEU.

Only the standard library: a worker whose engine never imports torch (CTranslate2's, on a CPU) is
measured without it, as its users run it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARMUP = 8


def source_lines(path: str, limit: int) -> list[str]:
    """The lines of `path`, the first `limit` of them if `limit` > 0."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return lines[:limit] if limit > 0 else lines


def timed(translate: Callable[[list[str]], list[str]], spec: dict[str, Any]) -> float:
    """Seconds `translate` takes over the lines of spec["src"] (spec["limit"] of them) after the
    warm-up; what it wrote goes to spec["out"], a line each."""
    lines = source_lines(spec["src"], spec["limit"])
    translate(lines[:WARMUP])
    start = time.perf_counter()
    out = translate(lines)
    seconds = time.perf_counter() - start
    Path(spec["out"]).write_text("".join(line + "\n" for line in out), encoding="utf-8")
    return seconds
