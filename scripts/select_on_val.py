"""Choose a Multi30k run's decode settings on val: the best by BLEU of the
`val_{checkpoint}_lp{length penalty}.json` records that scripts/multi30k_eval.sh wrote.

    python -m scripts.select_on_val RUN_DIR/eval          # choose: writes selection.json, val_table.txt
    python -m scripts.select_on_val RUN_DIR/eval --show   # the recorded choice
    python -m scripts.select_on_val --mean OUT DIR...     # one choice for several directions' records:
                                                          # the best mean BLEU, written into OUT

All print `CHECKPOINT LENGTH_PENALTY VAL_BLEU` (what the shell scripts read). selection.json is the
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


def choose_mean(out: Path, folders: list[Path]) -> dict:
    """The settings with the best mean BLEU over FOLDERS (one per direction, each holding the same
    candidates), recorded in OUT/selection.json beside a table of all of them."""
    by_folder = [{(row["checkpoint"], row["length_penalty"]): row for row in candidates(f)} for f in folders]
    settings = set(by_folder[0])
    for folder, rows in zip(folders, by_folder, strict=True):
        if set(rows) != settings:
            fail(
                f"{folder} holds other candidates than {folders[0]}: decode the same ones for every direction"
            )
    means = []
    for checkpoint, lp in settings:
        scores = {
            f.name: rows[checkpoint, lp]["val_bleu"] for f, rows in zip(folders, by_folder, strict=True)
        }
        mean = round(sum(scores.values()) / len(scores), 2)
        means.append(
            {
                "checkpoint": checkpoint,
                "beam": BEAM,
                "length_penalty": lp,
                "val_bleu": mean,
                "val_record": [
                    str(f / rows[checkpoint, lp]["val_record"])
                    for f, rows in zip(folders, by_folder, strict=True)
                ],
                "val_bleu_by_direction": scores,
            }
        )
    means.sort(key=lambda row: (row["val_bleu"], row["checkpoint"], row["length_penalty"]), reverse=True)
    table = "".join(
        f"mean val BLEU {row['val_bleu']:6.2f}  checkpoint {row['checkpoint']:9s} beam {row['beam']}  "
        f"length penalty {row['length_penalty']}  "
        + "  ".join(f"{name} {score:.2f}" for name, score in row["val_bleu_by_direction"].items())
        + "\n"
        for row in means
    )
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "val_table.txt", table)
    write_text(out / RECORD, json.dumps(means[0], indent=1) + "\n")
    return means[0]


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
    if argv[:1] == ["--mean"] and len(argv) >= 3:
        row = choose_mean(Path(argv[1]), [Path(folder) for folder in argv[2:]])
    elif len(argv) in (1, 2) and argv[1:] in ([], ["--show"]):
        folder = Path(argv[0])
        row = recorded(folder) if len(argv) == 2 else choose(folder)
    else:
        fail("usage: python -m scripts.select_on_val EVAL_DIR [--show] | --mean OUT_DIR EVAL_DIR...")
    print(row["checkpoint"], row["length_penalty"], row["val_bleu"])


if __name__ == "__main__":
    main(sys.argv[1:])
