"""What a run's targets are: a translation's pieces, or a reader's labels (one per source line, or
one tag per word of the source).

The data pipeline reads, checks, encodes and lays out targets through the `Targets` of the run's
task, chosen once where the task is learnt (`TARGETS`: from the config, the label set's file, a
prepared corpus's manifest) and handed down with the tokenizers and the corpora.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from seq2seq.config.task import Task
from seq2seq.errors import DataError
from seq2seq.special import BOS, EOS, PAD

if TYPE_CHECKING:  # only their types are named here: a run's tokenizers load without torch
    from torch import Tensor

    from seq2seq.data.token_arrays import TokenArrays

log = logging.getLogger(__name__)

LABELS_FILE = "labels.json"
WORD_RULE = "a word begins after whitespace; zero-width and control characters make no word"


class Words(Protocol):
    """What splits a tagger's source lines into words: its tokenizer (`Tokenizer.words`), the one
    definition of a word that the tags must fit."""

    def words(self, line: str) -> list[str]: ...

    def word_counts(self, lines: Sequence[str], threads: int = -1) -> list[int]: ...


class PieceSide(Protocol):
    """A translation's target side, as its targets use it: its tokenizer (`Tokenizer.encode`)."""

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]: ...


class SourceSide(Protocol):
    """A reader's source side, as its targets use it: its tokenizer (`Tokenizer.word_starts`)."""

    def word_starts(self) -> np.ndarray: ...


class LabelSide(Protocol):
    """A reader's target side, as its targets use it: its label set (`seq2seq.data.labels.Labels`)."""

    def targets(
        self, sources: Sequence[Sequence[int]], lines: Sequence[str], word_start: np.ndarray
    ) -> list[list[int]]: ...

    def unseen(self, lines: Sequence[str]) -> int: ...


class Tokenizers(Protocol):
    """What targets read and write with: a run's tokenizers (`seq2seq.data.tokenizer.TokenizerPair`,
    which holds its `Targets` and so is named here only by what they use of it)."""

    @property
    def src(self) -> SourceSide: ...

    @property
    def tgt(self) -> PieceSide: ...

    @property
    def labels(self) -> LabelSide: ...


class Targets(Protocol):
    """A task's targets, as the data pipeline meets them; each method is the work that differs."""

    @property
    def task(self) -> Task: ...

    @property
    def piece_sides(self) -> tuple[str, ...]:
        """The sides of a pair that are SentencePiece pieces (may be <unk>)."""
        ...

    def files(self, directory: Path) -> dict[str, Path]:
        """What a tokenizer directory holds for them besides the SentencePiece models, by name."""
        ...

    def ids(
        self, tokenizers: Tokenizers, sources: Sequence[Sequence[int]], lines: Sequence[str], threads: int
    ) -> list[list[int]]:
        """What the model must predict for each target line, given its source's ids."""
        ...

    def check_valid(
        self,
        tokenizers: Tokenizers,
        src_lines: list[str],
        tgt_lines: list[str],
        src_path: str | Path,
        tgt_path: str | Path,
    ) -> None:
        """Validation targets fit their sources (an error names the file and line)."""
        ...

    def length_ratio(self, max_len_ratio: float) -> float:
        """data.max_len_ratio as the length filter applies it to these targets (0: none)."""
        ...

    def layout(self, tgt: TokenArrays, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        """(tgt_in, tgt_out), each (B, T): what the model reads and what it must predict for `rows`."""
        ...

    def counts(self, tgt: TokenArrays) -> np.ndarray:
        """(N,) real (non-PAD) targets each example gives the loss: a batch's `num_tgt_tokens`."""
        ...

    def in_model_order(self, ids: Sequence[int]) -> list[int]: ...  # reading order <-> the model's, both ways


@dataclass(frozen=True)
class Pieces:
    """A translation's target: its pieces, with the teacher-forcing shift (`<bos> y` -> `y <eos>`);
    `right_to_left` (model.right_to_left): last piece first, `<bos> y_n ... y_1` -> `y_n ... y_1 <eos>`.
    Corpora hold targets in reading order for any model; `layout` and `in_model_order` make its order."""

    task: Task
    right_to_left: bool = False
    piece_sides = ("src", "tgt")

    def in_model_order(self, ids: Sequence[int]) -> list[int]:  # reversing is its own inverse
        return list(reversed(ids)) if self.right_to_left else list(ids)

    def files(self, directory: Path) -> dict[str, Path]:
        return {}

    def ids(
        self, tokenizers: Tokenizers, sources: Sequence[Sequence[int]], lines: Sequence[str], threads: int
    ) -> list[list[int]]:
        return tokenizers.tgt.encode(lines, threads)

    def check_valid(
        self,
        tokenizers: Tokenizers,
        src_lines: list[str],
        tgt_lines: list[str],
        src_path: str | Path,
        tgt_path: str | Path,
    ) -> None:
        """Any text is a translation's reference."""

    def length_ratio(self, max_len_ratio: float) -> float:
        return max_len_ratio

    def layout(self, tgt: TokenArrays, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        order = self.right_to_left
        return tgt.padded(rows, BOS, None, order), tgt.padded(rows, None, EOS, order)

    def counts(self, tgt: TokenArrays) -> np.ndarray:
        return tgt.lengths() + 1  # the pieces and <eos>


class LabelTargets(ABC):
    """What a reader's targets share: label ids (`seq2seq.data.labels.Labels`), not pieces, read
    without a shift or a length ratio; the loss counts those that are not PAD."""

    task: Task
    noun: str  # what the label set's log line calls them
    piece_sides = ("src",)

    @abstractmethod
    def names(self, line: str) -> list[str]:
        """The label names a target line holds."""

    @abstractmethod
    def place(
        self,
        sources: Sequence[Sequence[int]],
        ids: list[list[int]],
        lines: Sequence[str],
        word_start: np.ndarray,
    ) -> list[list[int]]:
        """The label ids of each line (`ids`) where the model predicts them, given its source."""

    @abstractmethod
    def _chunk_names(
        self, kept: list[tuple[int, str, str]], words: Words | None, src_name: object, tgt_name: object
    ) -> set[str]:
        """The names of (line number, source, target) triples with text on both sides, each checked."""

    @abstractmethod
    def layout(self, tgt: TokenArrays, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        """(tgt_in, tgt_out), each (B, T): what the model reads and what it must predict for `rows`."""

    def files(self, directory: Path) -> dict[str, Path]:
        return {"labels": directory / LABELS_FILE}

    def in_model_order(self, ids: Sequence[int]) -> list[int]:
        return list(ids)

    def ids(
        self, tokenizers: Tokenizers, sources: Sequence[Sequence[int]], lines: Sequence[str], threads: int
    ) -> list[list[int]]:
        return tokenizers.labels.targets(sources, lines, tokenizers.src.word_starts())

    def check_valid(
        self,
        tokenizers: Tokenizers,
        src_lines: list[str],
        tgt_lines: list[str],
        src_path: str | Path,
        tgt_path: str | Path,
    ) -> None:
        """Also count, in a warning, the labels never seen in training (left out of loss and accuracy)."""
        self.names_of(zip(src_lines, tgt_lines, strict=True), src_path, tgt_path)
        if unseen := tokenizers.labels.unseen(tgt_lines):
            log.warning(
                "%s: %d labels never seen in training; they are not scored in validation", tgt_path, unseen
            )

    def length_ratio(self, max_len_ratio: float) -> float:
        return 0.0

    def counts(self, tgt: TokenArrays) -> np.ndarray:
        lengths = tgt.lengths()
        starts = np.minimum(tgt.offsets[:-1], max(len(tgt.ids) - 1, 0))  # reduceat's bounds
        counts = np.add.reduceat(tgt.ids != PAD, starts, dtype=np.int64) if len(tgt.ids) else lengths
        return np.where(lengths > 0, counts, 0)  # reduceat gives an empty row its next element

    def names_of(
        self,
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
            names |= self._chunk_names(kept, words, src_name, tgt_name)
        return names


@dataclass(frozen=True)
class OneLabel(LabelTargets):
    """A classifier's target: one label per source line, predicted once per source."""

    task: Task
    noun = "labels"

    def names(self, line: str) -> list[str]:
        return [line.strip()]

    def place(
        self,
        sources: Sequence[Sequence[int]],
        ids: list[list[int]],
        lines: Sequence[str],
        word_start: np.ndarray,
    ) -> list[list[int]]:
        return ids

    def _chunk_names(
        self, kept: list[tuple[int, str, str]], words: Words | None, src_name: object, tgt_name: object
    ) -> set[str]:
        return {tgt.strip() for _, _, tgt in kept}

    def layout(self, tgt: TokenArrays, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        labels = tgt.padded(rows, None, None)  # (B, 1)
        return labels, labels


@dataclass(frozen=True)
class WordTags(LabelTargets):
    """A tagger's target: one tag per word of the source, on the word's first piece."""

    task: Task
    noun = "tags"

    def names(self, line: str) -> list[str]:
        return line.split()

    def place(
        self,
        sources: Sequence[Sequence[int]],
        ids: list[list[int]],
        lines: Sequence[str],
        word_start: np.ndarray,
    ) -> list[list[int]]:
        """One id per source piece: a word's tag on its first piece (`word_start[id]`: the piece begins
        a word, as `Tokenizer.words` counts them), PAD on every other piece, so the loss ignores it.
        A blank tag line is all PAD: a pair with an empty side teaches nothing (training drops it)."""
        out = []
        for source, tags, line in zip(sources, ids, lines, strict=True):
            if not line.strip():
                out.append([PAD] * len(source))
                continue
            starts = word_start[np.asarray(source, dtype=np.int64)] if source else np.zeros(0, bool)
            if int(starts.sum()) != len(tags):
                raise DataError(
                    f"the tokenizer splits the source of the tag line {line.strip()[:80]!r} into "
                    f"{int(starts.sum())} words, not the {len(tags)} its tag line has ({WORD_RULE})"
                )
            per_piece = np.full(len(source), PAD, dtype=np.int64)
            per_piece[starts] = tags
            out.append(per_piece.tolist())
        return out

    def _chunk_names(
        self, kept: list[tuple[int, str, str]], words: Words | None, src_name: object, tgt_name: object
    ) -> set[str]:
        names: set[str] = set()
        counts = words.word_counts([src for _, src, _ in kept]) if words else [None] * len(kept)
        for (number, src, tgt), count in zip(kept, counts, strict=True):
            tags = tgt.split()
            if count is not None and len(tags) != count:
                assert words is not None  # counts come from `words`
                found = " ".join(repr(w) for w in words.words(src)[:12])
                raise DataError(
                    f"{tgt_name}:{number}: {len(tags)} tags for the {count} words of {src_name}:{number} "
                    f"({found}); give one tag per word ({WORD_RULE})"
                )
            names.update(tags)
        return names

    def layout(self, tgt: TokenArrays, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        tags = tgt.padded(rows, None, PAD)  # (B, S): a column for the source's <eos>, aligned with it
        return tags, tags


# the chooser: each task's targets, the only place the data pipeline names a task
TRANSLATION = Pieces(Task.TRANSLATE)  # what a corpus made without a task holds
RIGHT_TO_LEFT = Pieces(Task.TRANSLATE, right_to_left=True)  # a translation's, for model.right_to_left
LABELS: dict[Task, LabelTargets] = {Task.CLASSIFY: OneLabel(Task.CLASSIFY), Task.TAG: WordTags(Task.TAG)}
TARGETS: dict[Task, Targets] = {Task.TRANSLATE: TRANSLATION, **LABELS}
