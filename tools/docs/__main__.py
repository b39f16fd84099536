"""`python -m tools.docs DIR`: write the generated reference pages into DIR (what `mkdocs build`
adds to the site through `tools/docs/hooks.py`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tools.docs import PAGES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__)
    parser.add_argument("out", type=Path, help="the directory the pages go to (reference/*.md under it)")
    out: Path = parser.parse_args(argv).out
    for name, make in PAGES.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
