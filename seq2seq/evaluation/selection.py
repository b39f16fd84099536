"""Decode settings chosen on validation data: the best BLEU among `s2s evaluate --json` records.

Each record says what it measured: the checkpoints that translated, the beam, the length penalty and
the runs that reranked the beam, with their weights, if any did (`evaluation.record`). Records of
the same settings (one per direction, for a model of several) are one candidate, scored by their mean
BLEU; every candidate must have measured the same sets (their source and references, by sha256) with
the same BLEU (its signature), and every score must be a finite number. The best mean wins; between
equals, the one whose records came first. Asked `within` a margin, the choice is the cheapest to
decode with of the candidates that far from the best (`cost`: the fewest models running, then the
smallest beam), the best of those among equals: a deployed model trades a little BLEU it cannot show
on val for speed it will. `s2s select` prints the choice and writes it as JSON
(`selection_record`), never over a record, which `read_selection` reads back (`s2s pipeline` does,
to decode with it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs, write_text
from seq2seq.flags import argument, option
from seq2seq.translate.options import Rerank

MAX_WITHIN = 100.0  # --within: BLEU is a score out of 100


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
    rerank: tuple[str, ...] = ()  # the runs that reranked the beam (`--rerank`), none when none did
    rerank_weight: tuple[float, ...] = ()  # their weights (`--rerank-weight`), in the same order

    def describe(self) -> str:
        """`VAL_BLEU  checkpoint(s) beam length penalty [reranked]`, one line for people."""
        names = ", ".join(Path(c).name for c in self.checkpoints)
        penalty = f"length penalty {self.length_penalty:g}"
        judges = ", ".join(f"{run} at {w:g}" for run, w in zip(self.rerank, self.rerank_weight, strict=True))
        reranked = f"  reranked by {judges}" if judges else ""
        return f"val BLEU {self.val_bleu:6.2f}  {names}  beam {self.beam}  {penalty}{reranked}"


# checkpoints, beam, length penalty, the runs that reranked (none: none), their weights
Setting = tuple[tuple[str, ...], int, float, tuple[str, ...], tuple[float, ...]]


def rerank_fields(runs: tuple[str, ...], weights: tuple[float, ...]) -> dict[str, Any]:
    """How a choice writes its reranking: as an evaluation's record does (`Rerank.record`), and "" and
    0 for none."""
    return Rerank(runs=runs, weights=weights).record() or {"rerank": "", "rerank_weight": 0.0}


@dataclass(frozen=True)
class Record:
    """What one `s2s evaluate --json` record of a run's translations says, of what choosing needs."""

    path: Path
    setting: Setting  # one candidate
    bleu: float
    signature: str  # how BLEU was computed (sacreBLEU's signature)
    files: tuple[tuple[str, str, int], ...]  # (path, sha256, lines) of the source, then each reference

    @property
    def measured(self) -> tuple[tuple[str, ...], str]:
        """What makes two scores comparable: the set, by the sha256 of its files, and the metric."""
        return (self.files[0][1], *sorted(sha for _, sha, _ in self.files[1:])), self.signature

    def describe_set(self) -> str:
        shown = ", ".join(f"{name} ({lines} lines, sha256 {sha[:12]})" for name, sha, lines in self.files)
        return f"{self.path} (source, references: {shown}; BLEU {self.signature})"


def read_record(path: Path) -> Record:
    """One `s2s evaluate --json` record of a run's translations; its numbers must be finite."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        bleu = record["systems"][0]["scores"]["bleu"]
        decode, model = record["decode"], record["model"]
        if decode is None or model is None:
            raise SelectionError(
                f"{path} scores given hypotheses (--hyp): choose among evaluations that translated "
                "with a run (`s2s evaluate RUN --src S --ref R --json FILE`)"
            )
        files = tuple(
            (str(f["path"]), str(f["sha256"]), int(f["lines"]))
            for f in [record["source"], *record["references"]]
        )
        checkpoints = tuple(str(c["path"]) for c in model["checkpoints"])
        # records of a plain beam do not name it
        reranked = Rerank.read(decode.get("rerank"), decode.get("rerank_weight"))
        rerank, weights = reranked.runs, reranked.weights
        found = Record(
            path,
            (checkpoints, int(decode["beam"]), float(decode["length_penalty"]), rerank, weights),
            float(bleu["score"]),
            str(bleu["signature"]),
            files,
        )
    except (OSError, ValueError, TypeError, KeyError, IndexError) as e:
        raise SelectionError(
            f"{path} is not an `s2s evaluate --json` record with a BLEU score ({type(e).__name__}: {e})"
        ) from None
    numbers: tuple[tuple[str, float], ...] = (
        ("BLEU score", found.bleu),
        ("length penalty", found.setting[2]),
    )
    numbers += tuple(("rerank weight", weight) for weight in weights)
    for what, value in numbers:
        if not math.isfinite(value):
            raise SelectionError(f"{path}: its {what} is {value}, not a finite number; nothing is chosen")
    return found


def candidates(records: Sequence[Path]) -> list[Candidate]:
    """Every setting the records measured, best mean BLEU first (first seen first among equals)."""
    if not records:
        raise SelectionError("no `s2s evaluate --json` records to choose from")
    groups: dict[Setting, list[Record]] = {}
    for path in records:
        record = read_record(path)
        groups.setdefault(record.setting, []).append(record)
    counts = {len(found) for found in groups.values()}
    if len(counts) > 1:
        raise SelectionError(
            "the settings were not all decoded on the same sets (records per setting: "
            + ", ".join(str(len(found)) for found in groups.values())
            + "): evaluate every setting on every set"
        )
    check_comparable(list(groups.values()))
    found = [
        Candidate(
            checkpoints,
            beam,
            penalty,
            sum(r.bleu for r in rows) / len(rows),
            rows[0].signature,
            tuple(str(r.path) for r in rows),
            rerank,
            weight,
        )
        for (checkpoints, beam, penalty, rerank, weight), rows in groups.items()
    ]
    return sorted(found, key=lambda c: -c.val_bleu)


def check_comparable(groups: Sequence[Sequence[Record]]) -> None:
    """Every setting's records measured the sets the first setting's did (by their files' sha256),
    with the same metric; otherwise an error naming the records that differ."""
    first = groups[0]
    wanted = sorted(r.measured for r in first)
    for group in groups[1:]:
        found = sorted(r.measured for r in group)
        if found == wanted:
            continue
        odd = [r for r in first if r.measured not in found] + [r for r in group if r.measured not in wanted]
        raise SelectionError(
            "records of different sets or metrics cannot be compared: "
            + " | ".join(r.describe_set() for r in odd or [*first, *group])
            + "; evaluate every setting on the same val sets, scored the same way"
        )


@dataclass(frozen=True)
class SelectJob:
    """What `s2s select` chooses among, and where it writes its choice."""

    records: tuple[Path, ...] = argument("`s2s evaluate --json` records of the candidates on val.")
    json_file: Path | None = option(None, "Write the choice and the ranking here.", "--json")
    within: float = option(
        0.0,
        "Choose the cheapest candidate within this much val BLEU of the best: the fewest models "
        "decoding (an ensemble's members, a reranking model), then the smallest beam.",
        "--within",
        between=(0.0, MAX_WITHIN),
        why="BLEU is a score out of 100",
    )


def cost(candidate: Candidate) -> tuple[int, int]:
    """What decoding with a candidate costs, in the order it grows: the models that run (an
    ensemble's members and the model that reranks its beam), then the beam."""
    return len(candidate.checkpoints) + len(candidate.rerank), candidate.beam


def cheapest(ranked: Sequence[Candidate], within: float) -> Candidate:
    """Of the candidates (best first) at most `within` val BLEU below the best, the cheapest; among
    equally cheap ones the first, the best."""
    floor = ranked[0].val_bleu - within - 1e-9  # BLEU is printed to 2 decimals: no rounding in the way
    return min((c for c in ranked if c.val_bleu >= floor), key=cost)


def choose(
    records: Sequence[Path], json_file: Path | None, within: float = 0.0
) -> tuple[Candidate, list[Candidate]]:
    """`s2s select`: the choice and every candidate ranked by val BLEU, as written to `json_file`
    (never one of the records)."""
    check_outputs({"--json": json_file}, {f"record #{i + 1}": p for i, p in enumerate(records)})
    ranked = candidates(records)
    choice = cheapest(ranked, within)
    if json_file is not None:
        write_selection(json_file, ranked, choice, within)
    return choice, ranked


def selection_record(
    ranked: Sequence[Candidate], choice: Candidate | None = None, within: float = 0.0
) -> dict[str, Any]:
    """The JSON of a choice (the best candidate unless given), the margin it was chosen within, and
    every candidate ranked."""
    chosen = ranked[0] if choice is None else choice
    return {**as_json(chosen), "within": within, "candidates": [as_json(c) for c in ranked]}


def as_json(candidate: Candidate) -> dict[str, Any]:
    return asdict(candidate) | rerank_fields(candidate.rerank, candidate.rerank_weight)


def write_selection(
    path: Path, ranked: Sequence[Candidate], choice: Candidate | None = None, within: float = 0.0
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(selection_record(ranked, choice, within), indent=1) + "\n")


def read_selection(path: Path) -> Candidate:
    """The choice `write_selection` wrote into `path`."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        # choices made before reranking was a candidate do not name it
        reranked = Rerank.read(raw.get("rerank", ""), raw.get("rerank_weight", 0.0))
        choice = Candidate(
            tuple(str(c) for c in raw["checkpoints"]),
            int(raw["beam"]),
            float(raw["length_penalty"]),
            float(raw["val_bleu"]),
            str(raw["bleu_signature"]),
            tuple(str(r) for r in raw["records"]),
            reranked.runs,
            reranked.weights,
        )
        numbers = (choice.length_penalty, choice.val_bleu, *choice.rerank_weight)
        if not all(math.isfinite(n) for n in numbers):
            raise ValueError("a length penalty, BLEU score or rerank weight that is not a finite number")
        return choice
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise SelectionError(
            f"{path} cannot be read as a choice ({type(e).__name__}: {e}): choose again with "
            "`s2s select RECORD.json ... --json FILE`"
        ) from None
