"""The label set of an encoder-only reader: built from the training targets, kept in the run directory.

`task: classify` reads one label per line; `task: tag` one tag per word of the source, as its tokenizer
splits it (`Tokenizer.words`: training, validation and translation count words the same way).
A label's id is its index in the sorted label list plus one: id 0 is PAD, which the loss ignores
(padding, the pieces after a word's first, and labels never seen in training).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Protocol

import numpy as np

from seq2seq.data.textio import count_lines, iter_line_chunks
from seq2seq.errors import DataError, RunDirError
from seq2seq.files import write_text
from seq2seq.special import PAD

log = logging.getLogger(__name__)

LABELS_FILE = "labels.json"
TASKS = ("classify", "tag")
WORD_RULE = "a word begins after whitespace; zero-width and control characters make no word"


class Words(Protocol):
    """What splits a tagger's source lines into words: its tokenizer (`Tokenizer.words`), the one
    definition of a word that the tags must fit."""

    def words(self, line: str) -> list[str]: ...

    def word_counts(self, lines: Sequence[str], threads: int = -1) -> list[int]: ...


@dataclass(frozen=True)
class Labels:
    """Label names <-> ids, with the interface of a target tokenizer (encode, decode, vocab_size)."""

    task: str  # "classify" or "tag"
    names: tuple[str, ...]  # sorted; id = index + 1
    path: Path | None = None

    @classmethod
    def load(cls, path: Path) -> Labels:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            labels = cls(raw["task"], tuple(raw["labels"]), path)
        except FileNotFoundError:
            raise RunDirError(
                f"label set not found: {path}; a reader run needs the labels it was trained on"
            ) from None
        except (OSError, ValueError, KeyError, TypeError):
            raise RunDirError(f"{path} is not a readable s2s label set (corrupted?)") from None
        if labels.task not in TASKS or not labels.names:
            raise RunDirError(f"{path} is not a readable s2s label set (corrupted?)")
        return labels

    def save(self, path: Path) -> None:
        write_text(path, json.dumps({"task": self.task, "labels": list(self.names)}, indent=1) + "\n")

    @property
    def vocab_size(self) -> int:
        return len(self.names) + 1

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]:
        """Ids of each line's label (classify) or tags (tag); an unknown label is PAD."""
        index = {name: i + 1 for i, name in enumerate(self.names)}
        if self.task == "classify":
            return [[index.get(line.strip(), PAD)] for line in lines]
        return [[index.get(tag, PAD) for tag in line.split()] for line in lines]

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]:
        """One line per id sequence: the label, or the tags separated by spaces."""
        return [" ".join(self.names[i - 1] for i in seq if 0 < i <= len(self.names)) for seq in ids]

    def targets(
        self, sources: Sequence[Sequence[int]], lines: Sequence[str], word_start: np.ndarray
    ) -> list[list[int]]:
        """What the model must predict for each source: the label, or one id per source piece.

        For tags, a word's tag sits on its first piece (`word_start[id]`: the piece begins a word,
        as `Tokenizer.words` counts them) and every other piece is PAD, so the loss ignores it. A
        blank tag line is all PAD: a pair with an empty side teaches nothing (training drops it).
        """
        encoded = self.encode(lines)
        if self.task == "classify":
            return encoded
        out = []
        for ids, tags, line in zip(sources, encoded, lines):
            if not line.strip():
                out.append([PAD] * len(ids))
                continue
            starts = word_start[np.asarray(ids, dtype=np.int64)] if ids else np.zeros(0, bool)
            if int(starts.sum()) != len(tags):
                raise DataError(
                    f"the tokenizer splits the source of the tag line {line.strip()[:80]!r} into "
                    f"{int(starts.sum())} words, not the {len(tags)} its tag line has ({WORD_RULE})"
                )
            per_piece = np.full(len(ids), PAD, dtype=np.int64)
            per_piece[starts] = tags
            out.append(per_piece.tolist())
        return out

    def unseen(self, lines: Sequence[str]) -> int:
        """How many labels (or tags) of `lines` are not in the set."""
        known = set(self.names)
        if self.task == "classify":
            return sum(1 for line in lines if line.strip() and line.strip() not in known)
        return sum(1 for line in lines for tag in line.split() if tag not in known)


def label_names(
    task: str,
    pairs: Iterable[tuple[str, str]],
    src_name: str | Path,
    tgt_name: str | Path,
    words: Words | None = None,
) -> set[str]:
    """The labels (or tags) of these (source line, label line) pairs, each pair checked on the way:
    one label, or as many tags as `words` finds words in the source.

    An error names the file and line. Pairs where either side is empty are skipped (training drops
    them). Without `words` the tags are not counted here: `Labels.targets` counts them against the
    same tokenizer's words when it places them.
    """
    names: set[str] = set()
    numbered = enumerate(pairs, 1)
    while chunk := list(islice(numbered, 4096)):  # one batched encoding per chunk
        kept = [(number, src, tgt) for number, (src, tgt) in chunk if src.strip() and tgt.strip()]
        if task == "classify":
            names.update(tgt.strip() for _, _, tgt in kept)
            continue
        counts = words.word_counts([src for _, src, _ in kept]) if words else [None] * len(kept)
        for (number, src, tgt), count in zip(kept, counts):
            tags = tgt.split()
            if count is not None and len(tags) != count:
                found = " ".join(repr(w) for w in words.words(src)[:12])
                raise DataError(
                    f"{tgt_name}:{number}: {len(tags)} tags for the {count} words of {src_name}:{number} "
                    f"({found}); give one tag per word ({WORD_RULE})"
                )
            names.update(tags)
    return names


def check_targets(task: str, src_path: str | Path, tgt_path: str | Path, words: Words) -> None:
    """Every label line of `tgt_path` fits its line of `src_path` (see `label_names`)."""
    label_names(task, _file_pairs(src_path, tgt_path), src_path, tgt_path, words)


def build_labels(
    task: str, src_files: Sequence[Path], tgt_files: Sequence[Path], path: Path, words: Words
) -> Labels:
    """Check the training targets (tags against the words of `words`, the run's source tokenizer) and
    store their label set at `path`; one streamed pass over each file."""
    names: set[str] = set()
    for src, tgt in zip(src_files, tgt_files):
        names |= label_names(task, _file_pairs(src, tgt), src, tgt, words)
    if not names:
        raise DataError(f"{', '.join(map(str, tgt_files))}: no labels")
    labels = Labels(task, tuple(sorted(names)), path)
    labels.save(path)
    log.info("%d %s: %s", len(names), "labels" if task == "classify" else "tags", " ".join(labels.names[:20]))
    return labels


def _file_pairs(src_path: str | Path, tgt_path: str | Path) -> Iterator[tuple[str, str]]:
    """The aligned lines of two files, streamed; files of different lengths are an error."""
    src_count, tgt_count = count_lines(src_path), count_lines(tgt_path)
    if src_count != tgt_count:
        raise DataError(
            f"{src_path} has {src_count} lines but {tgt_path} has {tgt_count}: "
            "each source line needs its label line"
        )
    src_lines, tgt_lines = (chain.from_iterable(iter_line_chunks(p)) for p in (src_path, tgt_path))
    return zip(src_lines, tgt_lines)
