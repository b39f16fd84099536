"""A test set modified like real text (`s2s evaluate --augment`), translated and scored beside the set
as given.

Each modifier makes one copy of the whole set with `seq2seq.data.augment`'s modifiers, the ones
training uses: `upper` and `title` change the source and the references (the translation of an
ALL-CAPS headline is an ALL-CAPS headline); `typos` and `nopunct` change the source only (the
translation should be the one of the clean source). A line's random choices (which words get typos)
come from --seed, the modifier and the line's number, so the same seed gives the same sets.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seq2seq.data.augment import LINE_MODIFIERS, mixed_keys
from seq2seq.errors import EvaluateError
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.metrics import TextFile, corpus_scores
from seq2seq.evaluation.record import AugmentedSet, DecodeRun

REFERENCES_TOO = ("upper", "title")  # the modifiers that change the references as well
EVALUATION_SALT = 0x657661  # the keys of a test set's lines: not any training epoch's


@dataclass(frozen=True)
class ModifiedSets:
    """Which modified copies of the test set `s2s evaluate` scores (none: the set as given only)."""

    modifiers: tuple[str, ...] = ()
    seed: int = 1

    @classmethod
    def parse(cls, names: str | None, seed: int) -> ModifiedSets:
        """From --augment `upper,typos` (comma-separated) and --seed; an unknown name is an error."""
        asked = tuple(dict.fromkeys(n.strip() for n in (names or "").split(",") if n.strip()))
        if unknown := [n for n in asked if n not in LINE_MODIFIERS]:
            raise EvaluateError(
                f"--augment {', '.join(unknown)}: not a modifier; choose among {', '.join(LINE_MODIFIERS)} "
                "(comma-separated)"
            )
        if names is not None and not asked:
            raise EvaluateError(f"--augment: name the modifiers, among {', '.join(LINE_MODIFIERS)}")
        return cls(asked, seed)

    def outputs(self, out: Path | None) -> dict[str, Path | None]:
        """Where each modified copy's translations go, beside --out: OUT.upper, OUT.typos, ..."""
        return {f"--out (+{m})": augmented_path(out, m) if out else None for m in self.modifiers}


AS_GIVEN = ModifiedSets()


def augmented_path(out: Path, modifier: str) -> Path:
    return out.with_name(f"{out.name}.{modifier}")


def modified_lines(lines: Sequence[str], modifier: str, seed: int) -> list[str]:
    """`lines` with `modifier` applied to each (a blank line stays as it is)."""
    index = list(LINE_MODIFIERS).index(modifier)
    keys = mixed_keys(EVALUATION_SALT, seed, index, np.arange(len(lines)))
    change = LINE_MODIFIERS[modifier]
    return [
        change(line, random.Random(int(k))) if line.strip() else line
        for line, k in zip(lines, keys, strict=True)
    ]


def modified_file(file: TextFile, modifier: str, seed: int) -> TextFile:
    """A copy of `file` modified (its checksum is the modified text's; nothing is written)."""
    lines = modified_lines(file.lines, modifier, seed)
    digest = hashlib.sha256("".join(f"{line}\n" for line in lines).encode("utf-8")).hexdigest()
    return TextFile(file.path, lines, digest)


Translate = Callable[[TextFile, Path], DecodeRun]  # source lines -> translations written to a file


def augmented_sets(
    augment: ModifiedSets,
    source: TextFile,
    references: Sequence[TextFile],
    options: MetricOptions,
    out: Path,
    translate: Translate,
) -> list[AugmentedSet]:
    """Each modified copy of the set, translated into OUT.MODIFIER with `translate` and scored."""
    sets = []
    for modifier in augment.modifiers:
        src = modified_file(source, modifier, augment.seed)
        changed = modifier in REFERENCES_TOO
        refs = [modified_file(r, modifier, augment.seed) if changed else r for r in references]
        path = augmented_path(out, modifier)
        decode = translate(src, path)
        hypotheses = TextFile.read(path)
        scores = corpus_scores(hypotheses.lines, [r.lines for r in refs], options)
        sets.append(AugmentedSet(modifier, augment.seed, changed, src.sha256, hypotheses, scores, decode))
    return sets
