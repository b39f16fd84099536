"""The multilingual table (README.md here, docs/multilingual.md), from what run.sh wrote into RUNS:
test_2016 BLEU (val BLEU in brackets) of the six bilingual runs, each with its own choice on val (the
workspaces of their pipelines, bilingual/*.yaml), and of the six-direction run with its one choice,
zero-shot fr->de with and without pivoting through English; and each run's training steps.

    python -m experiments.multilingual.multilingual_table runs/ml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from seq2seq.evaluation.selection import read_selection
from seq2seq.pipeline.workspace import Workspace
from seq2seq.run.finished import read_finished
from seq2seq.run.layout import RunDir

DIRECTIONS = ("de-en", "fr-en", "cs-en", "en-de", "en-fr", "en-cs")


def bleu(path: Path) -> tuple[float, str]:
    """BLEU and its signature from an `s2s evaluate --json` record."""
    score = json.loads(path.read_text(encoding="utf-8"))["systems"][0]["scores"]["bleu"]
    return float(score["score"]), str(score["signature"])


def cell(val: Path, test: Path) -> str:
    """`test (val)` BLEU, or a dash where a record is missing."""
    if not (val.is_file() and test.is_file()):
        return "—"
    return f"{bleu(test)[0]:.2f} ({bleu(val)[0]:.2f})"


def steps(run: Path) -> str:
    """The step a run finished at, as its record says (`seq2seq.run.finished`); ? if it has not."""
    finished = read_finished(RunDir(run))
    return f"{finished.step:,}" if finished is not None else "?"


def main(runs: Path) -> None:
    print(
        "| system | "
        + " | ".join(d.replace("-", "→") for d in DIRECTIONS)
        + " | fr→de zero-shot | fr→en→de pivot |"
    )
    print("|---" * (len(DIRECTIONS) + 3) + "|")
    cells, counts = [], []
    for direction in DIRECTIONS:
        pipeline = Workspace(runs / direction.replace("-", "_"), *direction.split("-"))
        chosen = Path(read_selection(pipeline.selection("select_teacher")).records[0])  # its val record
        cells.append(cell(chosen, pipeline.evaluation("teacher", "test_2016_flickr")))
        counts.append(steps(pipeline.folder("teacher")))
    print("| six bilingual models | " + " | ".join(cells) + " | — | — |")
    run = runs / "multilingual"
    folder = run / "eval"
    cells = [
        cell(folder / d / "val.json", folder / d / "test_2016_flickr.json")
        for d in (*DIRECTIONS, "fr-de", "fr-en-de")
    ]
    print("| one six-direction model | " + " | ".join(cells) + " |")
    choice = read_selection(folder / "selection.json")
    print(f"\nSteps: bilingual {', '.join(counts)}; six-direction {steps(run)}.")
    print(
        f"Six-direction choice on the mean of val: checkpoint {Path(choice.checkpoints[0]).stem}, beam "
        f"{choice.beam}, length penalty {choice.length_penalty:g} (mean val BLEU {choice.val_bleu:.2f})."
    )
    print(f"BLEU signature: {bleu(folder / 'de-en' / 'test_2016_flickr.json')[1]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
