"""CTranslate2 called directly on a run's export, as a program of its own: the whole-process peer of
`s2s translate RUN` (the same export, the run's decode settings and length limits:
benchmarks/ct2_direct.py), so that `/usr/bin/time` can time both as a user runs them.

    python -m experiments.search_rule.direct_ct2 EXPORT SRC OUT --beam 5 [--patience-1]

EXPORT is the export cache's entry `s2s translate RUN` uses (`s2s cache list`); `--patience-1` runs
CTranslate2's own default patience instead of the run's `decode.patience`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.ct2_direct import IMPATIENT, translator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export")
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--patience-1", action="store_true", help="CTranslate2's default patience")
    parser.add_argument("--max-tokens", type=int, default=2000, help="source tokens per batch")
    args = parser.parse_args()
    engine = IMPATIENT if args.patience_1 else "ct2 direct"
    spec = {"model": args.export, "quantize": None, "at_once": 2, "each": 1, "beam": args.beam}
    translate = translator(spec | {"max_tokens": args.max_tokens, "engine": engine})
    lines = Path(args.src).read_text(encoding="utf-8").splitlines()
    Path(args.out).write_text("\n".join(translate(lines)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
