"""Tables from the records s2s writes, for the studies' shell scripts:

    python -m experiments.records row RECORD NAME       # | NAME | BLEU | chrF | sent/s |
    python -m experiments.records best NAME=RECORD...   # the NAME whose record has the highest BLEU
    python -m experiments.records curve METRICS         # | step | val loss | val BLEU | per validation
    python -m experiments.records chosen CHOICE KEY     # what the choice says of KEY (a list: spaced)
    python -m experiments.records finished RUN          # the step RUN's training finished at (0: not)

RECORD is an `s2s evaluate --json` record, METRICS a run's metrics.jsonl, CHOICE an `s2s select
--json` file (a pipeline's selection.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from seq2seq.evaluation.selection import read_selection


def scores(record: Path) -> dict[str, Any]:
    """The scores of the record's (first) system."""
    return dict(json.loads(record.read_text(encoding="utf-8"))["systems"][0]["scores"])


def row(record: Path, name: str) -> str:
    """The record as a table row: its BLEU, chrF and decoding speed."""
    data = json.loads(record.read_text(encoding="utf-8"))
    found = data["systems"][0]["scores"]
    speed = data["decode"]["sentences_per_second"]
    return f"| {name} | {found['bleu']['score']:.2f} | {found['chrf']['score']:.2f} | {speed:.1f} |"


def best(named: list[str]) -> str:
    """Of NAME=RECORD pairs, the NAME with the highest BLEU (the first of equals)."""
    pairs = [item.split("=", 1) for item in named]
    return max(pairs, key=lambda pair: float(scores(Path(pair[1]))["bleu"]["score"]))[0]


def curve(metrics: Path) -> list[str]:
    """The run's validations of its raw weights, one table row each."""
    rows = []
    for line in metrics.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("kind") == "valid" and entry.get("weights", "raw") == "raw":
            rows.append(f"| {entry['step']:,} | {entry['valid_loss']:.3f} | {entry['valid_bleu']:.2f} |")
    return rows


def chosen(choice: Path, key: str) -> str:
    """What a choice on val says of `key` (`beam`, `length_penalty`, `checkpoints`: several, spaced),
    read as `s2s pipeline` reads it."""
    value = getattr(read_selection(choice), key)
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def finished(run: Path) -> int:
    """The step the run's training finished at (its finished.json), 0 where it has not finished."""
    path = run / "finished.json"
    return int(json.loads(path.read_text(encoding="utf-8"))["step"]) if path.is_file() else 0


USAGE = (
    "usage: python -m experiments.records row RECORD NAME | best NAME=RECORD... | curve METRICS "
    "| chosen CHOICE KEY | finished RUN"
)


def main(argv: list[str]) -> None:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    called_right = {
        "row": len(args) == 2,
        "best": len(args) >= 1,
        "curve": len(args) == 1,
        "chosen": len(args) == 2,
        "finished": len(args) == 1,
    }
    if not called_right.get(command, False):
        print(f"error: {USAGE}", file=sys.stderr)
        raise SystemExit(2)
    if command == "row":
        print(row(Path(args[0]), args[1]))
    elif command == "best":
        print(best(args))
    elif command == "chosen":
        print(chosen(Path(args[0]), args[1]))
    elif command == "finished":
        print(finished(Path(args[0])))
    else:
        print("\n".join(curve(Path(args[0]))))


if __name__ == "__main__":
    main(sys.argv[1:])
