"""Decode settings chosen on validation data: the best BLEU among `s2s evaluate --json` records.

Each record says what it measured: the checkpoints that translated, the beam and the length penalty
(`evaluation.record`). Records of the same settings (one per direction, for a model of several) are
one candidate, scored by their mean BLEU; every candidate must have as many records. The best mean
wins; between equals, the one whose records came first. `s2s select` prints the choice and writes it
as JSON (`selection_record`), which `read_selection` reads back (`s2s pipeline` does, to decode with
it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from seq2seq.errors import Seq2SeqError
from seq2seq.files import write_text


class SelectionError(Seq2SeqError):
    """Records that cannot be chosen from, or a choice that cannot be read back."""


@dataclass(frozen=True)
class Candidate:
    """One setting decoded on validation data, and how well it did."""

    checkpoints: tuple[str, ...]  # the checkpoint files that translated (several: an ensemble)
    beam: int
    length_penalty: float
    val_bleu: float  # the mean over its records
    bleu_signature: str
    records: tuple[str, ...]  # the `s2s evaluate --json` files it was read from

    def describe(self) -> str:
        """`VAL_BLEU  checkpoint(s) beam length penalty`, one line for people."""
        names = ", ".join(Path(c).name for c in self.checkpoints)
        penalty = f"length penalty {self.length_penalty:g}"
        return f"val BLEU {self.val_bleu:6.2f}  {names}  beam {self.beam}  {penalty}"


def read_record(path: Path) -> tuple[tuple[str, ...], int, float, float, str]:
    """(checkpoints, beam, length penalty, BLEU, BLEU signature) of one `s2s evaluate --json` record of
    a run's translations."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        bleu = record["systems"][0]["scores"]["bleu"]
        decode, model = record["decode"], record["model"]
        if decode is None or model is None:
            raise SelectionError(
                f"{path} scores given hypotheses (--hyp): choose among evaluations that translated "
                "with a run (`s2s evaluate RUN --src S --ref R --json FILE`)"
            )
        checkpoints = tuple(str(c["path"]) for c in model["checkpoints"])
        return (
            checkpoints,
            int(decode["beam"]),
            float(decode["length_penalty"]),
            float(bleu["score"]),
            str(bleu["signature"]),
        )
    except (OSError, ValueError, TypeError, KeyError, IndexError) as e:
        raise SelectionError(
            f"{path} is not an `s2s evaluate --json` record with a BLEU score ({type(e).__name__}: {e})"
        ) from None


def candidates(records: Sequence[Path]) -> list[Candidate]:
    """Every setting the records measured, best mean BLEU first (first seen first among equals)."""
    if not records:
        raise SelectionError("no `s2s evaluate --json` records to choose from")
    groups: dict[tuple[tuple[str, ...], int, float], list[tuple[Path, float, str]]] = {}
    for path in records:
        checkpoints, beam, penalty, bleu, signature = read_record(path)
        groups.setdefault((checkpoints, beam, penalty), []).append((path, bleu, signature))
    counts = {len(found) for found in groups.values()}
    if len(counts) > 1:
        raise SelectionError(
            "the settings were not all decoded on the same sets (records per setting: "
            + ", ".join(str(len(found)) for found in groups.values())
            + "): evaluate every setting on every set"
        )
    found = [
        Candidate(
            checkpoints,
            beam,
            penalty,
            sum(bleu for _, bleu, _ in rows) / len(rows),
            rows[0][2],
            tuple(str(path) for path, _, _ in rows),
        )
        for (checkpoints, beam, penalty), rows in groups.items()
    ]
    return sorted(found, key=lambda c: -c.val_bleu)


def selection_record(ranked: Sequence[Candidate]) -> dict[str, Any]:
    """The JSON of a choice: the best candidate's fields, and every candidate ranked."""
    return {**asdict(ranked[0]), "candidates": [asdict(c) for c in ranked]}


def write_selection(path: Path, ranked: Sequence[Candidate]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(selection_record(ranked), indent=1) + "\n")


def read_selection(path: Path) -> Candidate:
    """The choice `write_selection` wrote into `path`."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Candidate(
            tuple(str(c) for c in raw["checkpoints"]),
            int(raw["beam"]),
            float(raw["length_penalty"]),
            float(raw["val_bleu"]),
            str(raw["bleu_signature"]),
            tuple(str(r) for r in raw["records"]),
        )
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise SelectionError(
            f"{path} cannot be read as a choice ({type(e).__name__}: {e}): choose again with "
            "`s2s select RECORD.json ... --json FILE`"
        ) from None
