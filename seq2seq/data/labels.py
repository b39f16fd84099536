"""The label set of an encoder-only reader: built from the training targets, kept in the run directory.

`task: classify` reads one label per line; `task: tag` one tag per word of the source, as its tokenizer
splits it (`Tokenizer.words`: training, validation and translation count words the same way).
A label's id is its index in the sorted label list plus one: id 0 is PAD, which the loss ignores
(padding, the pieces after a word's first, and labels never seen in training).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from seq2seq.data.targets import LABELS, LABELS_FILE, LabelTargets, Words
from seq2seq.data.textio import count_lines, iter_line_chunks
from seq2seq.errors import DataError, RunDirError
from seq2seq.files import write_text
from seq2seq.special import PAD

log = logging.getLogger(__name__)

__all__ = ["LABELS_FILE", "Labels", "build_labels", "check_known_labels", "check_targets"]


@dataclass(frozen=True)
class Labels:
    """Label names <-> ids, with the interface of a target tokenizer (encode, decode, vocab_size)."""

    kind: LabelTargets  # one label per line (classify) or one tag per word (tag)
    names: tuple[str, ...]  # sorted; id = index + 1
    path: Path | None = None

    @classmethod
    def load(cls, path: Path) -> Labels:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            labels = cls(LABELS[raw["task"]], tuple(raw["labels"]), path)
        except FileNotFoundError:
            raise RunDirError(
                f"label set not found: {path}; a reader run needs the labels it was trained on"
            ) from None
        except (OSError, ValueError, KeyError, TypeError):
            raise RunDirError(f"{path} is not a readable s2s label set (corrupted?)") from None
        if not labels.names:
            raise RunDirError(f"{path} is not a readable s2s label set (corrupted?)")
        return labels

    def save(self, path: Path) -> None:
        record = {"task": str(self.kind.task), "labels": list(self.names)}
        write_text(path, json.dumps(record, indent=1) + "\n")

    @property
    def vocab_size(self) -> int:
        return len(self.names) + 1

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]:
        """Ids of each line's label (classify) or tags (tag); an unknown label is PAD."""
        index = {name: i + 1 for i, name in enumerate(self.names)}
        return [[index.get(name, PAD) for name in self.kind.names(line)] for line in lines]

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]:
        """One line per id sequence: the label, or the tags separated by spaces."""
        return [" ".join(self.names[i - 1] for i in seq if 0 < i <= len(self.names)) for seq in ids]

    def targets(
        self, sources: Sequence[Sequence[int]], lines: Sequence[str], word_start: np.ndarray
    ) -> list[list[int]]:
        """What the model must predict for each source: the label, or one id per source piece
        (`WordTags.place`: a word's tag on its first piece, PAD elsewhere)."""
        return self.kind.place(sources, self.encode(lines), lines, word_start)

    def unseen(self, lines: Sequence[str]) -> int:
        """How many labels (or tags) of `lines` are not in the set."""
        known = set(self.names)
        return sum(1 for line in lines for name in self.kind.names(line) if name and name not in known)


def check_targets(kind: LabelTargets, src_path: str | Path, tgt_path: str | Path, words: Words) -> None:
    """Every label line of `tgt_path` fits its line of `src_path` (see `LabelTargets.names_of`)."""
    kind.names_of(_file_pairs(src_path, tgt_path), src_path, tgt_path, words)


def build_labels(
    kind: LabelTargets,
    src_files: Sequence[str | Path],
    tgt_files: Sequence[str | Path],
    path: Path,
    words: Words,
) -> Labels:
    """Check the training targets (tags against the words of `words`, the run's source tokenizer) and
    store their label set at `path`; one streamed pass over each file."""
    names: set[str] = set()
    for src, tgt in zip(src_files, tgt_files, strict=True):
        names |= kind.names_of(_file_pairs(src, tgt), src, tgt, words)
    if not names:
        raise DataError(f"{', '.join(map(str, tgt_files))}: no labels")
    labels = Labels(kind, tuple(sorted(names)), path)
    labels.save(path)
    log.info("%d %s: %s", len(names), kind.noun, " ".join(labels.names[:20]))
    return labels


def check_known_labels(
    labels: Labels, src_files: Sequence[str | Path], tgt_files: Sequence[str | Path], words: Words
) -> None:
    """The training targets hold no label outside `labels`, a set not built from them (a fine-tuned
    reader's, copied from the run it starts from): its model has an output for those alone."""
    for src, tgt in zip(src_files, tgt_files, strict=True):
        if new := sorted(labels.kind.names_of(_file_pairs(src, tgt), src, tgt, words) - set(labels.names)):
            shown = " ".join(new[:10]) + (" ..." if len(new) > 10 else "")
            raise DataError(
                f"{tgt}: {len(new)} {labels.kind.noun} outside the run's label set {labels.path} ({shown}); "
                "the model has an output for those alone: drop these lines, or train a new reader"
            )


def _file_pairs(src_path: str | Path, tgt_path: str | Path) -> Iterator[tuple[str, str]]:
    """The aligned lines of two files, streamed; files of different lengths are an error."""
    src_count, tgt_count = count_lines(src_path), count_lines(tgt_path)
    if src_count != tgt_count:
        raise DataError(
            f"{src_path} has {src_count} lines but {tgt_path} has {tgt_count}: "
            "each source line needs its label line"
        )
    src_lines, tgt_lines = (chain.from_iterable(iter_line_chunks(p)) for p in (src_path, tgt_path))
    return zip(src_lines, tgt_lines, strict=True)
