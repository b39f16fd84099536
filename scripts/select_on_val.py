"""Choose a Multi30k run's decode settings on val: the best by BLEU of the
`val_{checkpoint}_lp{length penalty}.json` records that scripts/multi30k_eval.sh wrote.

    python -m scripts.select_on_val RUN_DIR/eval          # choose: writes selection.json, val_table.txt
    python -m scripts.select_on_val RUN_DIR/eval --show   # the recorded choice

Both print `CHECKPOINT LENGTH_PENALTY VAL_BLEU` (what the shell scripts read). selection.json is the
one format the scripts share: {"checkpoint", "beam", "length_penalty", "val_bleu", "val_record"}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

from seq2seq.files import write_text

BEAM = 5  # multi30k_eval.sh's candidates all decode with beam 5
RECORD = "selection.json"


def candidates(folder: Path) -> list[dict]:
    """Every val record in FOLDER with its settings, best BLEU first."""
    rows = []
    for path in sorted(folder.glob("val_*_lp*.json")):
        checkpoint, lp = path.stem[len("val_") :].rsplit("_lp", 1)
        score = bleu(path)[0]
        rows.append(
            {
                "checkpoint": checkpoint,
                "beam": BEAM,
                "length_penalty": lp,
                "val_bleu": score,
                "val_record": path.name,
            }
        )
    if not rows:
        fail(f"no val_*_lp*.json records in {folder} (run scripts/multi30k_eval.sh)")
    return sorted(
        rows, key=lambda row: (row["val_bleu"], row["checkpoint"], row["length_penalty"]), reverse=True
    )


def bleu(path: Path) -> tuple[float, str]:
    """BLEU and its sacreBLEU signature from an `s2s evaluate --json` record."""
    try:
        score = json.loads(path.read_text(encoding="utf-8"))["systems"][0]["scores"]["bleu"]
        return float(score["score"]), str(score["signature"])
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        fail(f"{path} is not an `s2s evaluate --json` record with a BLEU score")


def choose(folder: Path) -> dict:
    """The best candidate, recorded in FOLDER/selection.json beside a table of all of them."""
    rows = candidates(folder)
    table = "".join(
        f"val BLEU {row['val_bleu']:6.2f}  checkpoint {row['checkpoint']:9s} beam {row['beam']}  "
        f"length penalty {row['length_penalty']}\n"
        for row in rows
    )
    write_text(folder / "val_table.txt", table)
    write_text(folder / RECORD, json.dumps(rows[0], indent=1) + "\n")
    return rows[0]


def recorded(folder: Path) -> dict:
    """The choice that `choose` recorded in FOLDER."""
    path = folder / RECORD
    if not path.is_file():
        fail(f"{path} does not exist (run scripts/multi30k_eval.sh on the run first)")
    try:
        choice = json.loads(path.read_text(encoding="utf-8"))
        if not {"checkpoint", "length_penalty", "val_bleu", "val_record"} <= choice.keys():
            raise ValueError(choice)
        return choice
    except (OSError, ValueError, AttributeError):
        fail(f"{path} cannot be read: run `python -m scripts.select_on_val {folder}` to choose again")


def fail(message: str) -> NoReturn:
    """A clear error and exit status 2, as s2s gives for bad input."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str]) -> None:
    if len(argv) not in (1, 2) or (len(argv) == 2 and argv[1] != "--show"):
        fail("usage: python -m scripts.select_on_val EVAL_DIR [--show]")
    folder = Path(argv[0])
    row = recorded(folder) if len(argv) == 2 else choose(folder)
    print(row["checkpoint"], row["length_penalty"], row["val_bleu"])


if __name__ == "__main__":
    main(sys.argv[1:])
