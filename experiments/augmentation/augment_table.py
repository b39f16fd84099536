"""The table of the augmentation experiment (augment_quality.sh beside it): BLEU and chrF2 of the run
trained without augmentation (`off`) and with it (`on`) on each set as given and modified, and the
paired bootstrap of the two on each set as given.

    python -m experiments.augmentation.augment_table OUT   (OUT: off/, on/, SET.json, SET.bootstrap.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SETS = ("val", "test_2016_flickr")
ARMS = {"off": "as given", "on": "augmented"}


def scores(record: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each copy's BLEU and chrF2 ("given" for the set as it is), from an `s2s evaluate --json` record."""
    given = record["systems"][0]["scores"]
    found = {"given": {"BLEU": given["bleu"]["score"], "chrF2": given["chrf"]["score"]}}
    for copy in record["augmented"]:
        found[copy["modifier"]] = {
            "BLEU": copy["scores"]["bleu"]["score"],
            "chrF2": copy["scores"]["chrf"]["score"],
        }
    return found


def table(out: Path) -> str:
    """Markdown: a row per set and copy; per run its BLEU (change from its own set as given) and chrF2."""
    lines = [
        "| set | copy | BLEU, trained on text as given | BLEU, trained augmented | chrF2, as given "
        "| chrF2, augmented |",
        "|---|---|---|---|---|---|",
    ]
    signature = ""
    for name in SETS:
        records = {arm: json.loads((out / arm / f"{name}.json").read_text()) for arm in ARMS}
        signature = records["off"]["systems"][0]["scores"]["bleu"]["signature"]
        found = {arm: scores(r) for arm, r in records.items()}
        for copy in found["off"]:
            cells = []
            for arm in ARMS:
                bleu, clean = found[arm][copy]["BLEU"], found[arm]["given"]["BLEU"]
                cells.append(f"{bleu:.2f}" + (f" ({bleu - clean:+.2f})" if copy != "given" else ""))
            chrf = [f"{found[arm][copy]['chrF2']:.2f}" for arm in ARMS]
            lines.append(f"| {name} | {copy} | {' | '.join(cells)} | {' | '.join(chrf)} |")
    lines += ["", f"BLEU signature: {signature}", ""]
    for name in SETS:
        boot = json.loads((out / f"{name}.bootstrap.json").read_text())["bootstrap"]
        for key, results in boot["results"].items():
            base, other = results
            lines.append(
                f"- {name}, {key}: as given {base['mean']:.2f} ± {base['ci']:.2f}, augmented "
                f"{other['mean']:.2f} ± {other['ci']:.2f}, p = {other['p_value']:.4f} (paired bootstrap, "
                f"{boot['samples']} resamples)"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m experiments.augmentation.augment_table OUT")
    print(table(Path(args[0])))


if __name__ == "__main__":
    main()
