"""Parallel token data: flat id arrays, token-bucketed batches, and the padded batch (the shift).

A corpus of any size is two flat id arrays plus offsets (`seq2seq.data.token_arrays`: in memory, or
memory-mapped from a prepared corpus: `seq2seq.data.prepared`), so no Python object exists per
sentence. The teacher-forcing shift
happens once, where `ParallelData.batch` lays out a translation's targets (`Pieces.layout`): the
decoder reads `<bos> y` and must predict `y <eos>`. The source gets a trailing `<eos>`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from seq2seq.data.links import Links
from seq2seq.data.targets import TRANSLATION, Targets
from seq2seq.data.textio import read_lines
from seq2seq.data.token_arrays import TokenArrays
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.errors import DataError
from seq2seq.special import EOS, PAD

log = logging.getLogger(__name__)


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> tuple[list[str], list[str]]:
    """Aligned source and target lines; mismatched line counts or an empty corpus are errors."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: "
            "parallel files must align line by line"
        )
    if not any(s.strip() and t.strip() for s, t in zip(src, tgt, strict=True)):
        raise DataError(f"{src_path} / {tgt_path}: no sentence pair with text on both sides")
    return src, tgt


@dataclass
class ParallelData:
    """Token ids of aligned sentence pairs (without bos/eos), or of sources and their labels.

    `targets` says which: a translation's pieces, or a reader's label ids (one per source, or one per
    source piece, PAD where none: `seq2seq.data.targets`).
    """

    src: TokenArrays
    tgt: TokenArrays
    stored_costs: np.ndarray | None = None  # (N,) `costs()` as a prepared corpus stores them
    targets: Targets = TRANSLATION
    links: Links | None = None  # each pair's reference alignment, for guided alignment (None: none)

    @classmethod
    def from_lists(
        cls, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], targets: Targets = TRANSLATION
    ) -> ParallelData:
        assert len(src) == len(tgt)
        return cls(TokenArrays.from_lists(src), TokenArrays.from_lists(tgt), targets=targets)

    def __len__(self) -> int:
        return len(self.src)

    def costs(self) -> np.ndarray:
        """(N,) padded length each pair occupies in a batch: the longer of source+eos and bos+target."""
        if self.stored_costs is not None:
            return self.stored_costs
        return (np.maximum(self.src.lengths(), self.tgt.lengths()) + 1).astype(np.int32)

    def target_tokens(self) -> np.ndarray:
        """(N,) real (non-PAD) targets each example gives the loss: a batch's `num_tgt_tokens`, per example.

        A translation's target is its pieces and <eos>; a reader's are its labels other than PAD.
        """
        return self.targets.counts(self.tgt)

    def pairs(self, rows: Sequence[int] | np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
        """The source ids and the target ids of these pairs, as lists."""
        return self.src.sequences(rows), self.tgt.sequences(rows)

    def batch(self, rows: Sequence[int] | np.ndarray) -> Batch:
        """One padded batch of these pairs, with the teacher-forcing shift.

        A reader's batch has no shift: `tgt_in` and `tgt_out` are both the labels, (B, 1) for
        classify and (B, S) aligned with the source's columns for tag.
        """
        rows = np.asarray(rows, dtype=np.int64)
        tgt_in, tgt_out = self.targets.layout(self.tgt, rows)
        links = self.links.batch(rows) if self.links is not None else None
        return Batch(self.src.padded(rows, None, EOS), tgt_in, tgt_out, links)


@dataclass
class JoinedCorpus:
    """Several corpora read as one: pair i of part k is pair `starts[k] + i` of the whole.

    It batches as `ParallelData` does (`batch`, `costs`, `target_tokens`); each part keeps its own
    memory maps, nothing is copied but the per-pair costs and target counts.
    """

    parts: list[ParallelData]
    starts: np.ndarray  # (K + 1,) int64: where each part's pairs begin, then the total
    targets: Targets

    @classmethod
    def of(cls, parts: Sequence[ParallelData]) -> JoinedCorpus:
        starts = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=starts[1:])
        return cls(list(parts), starts, parts[0].targets)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def sizes(self) -> np.ndarray:
        """(K,) pairs in each part."""
        return np.diff(self.starts)

    def costs(self) -> np.ndarray:
        return np.concatenate([p.costs() for p in self.parts])

    def target_tokens(self) -> np.ndarray:
        return np.concatenate([p.target_tokens() for p in self.parts])

    def pairs(self, rows: Sequence[int] | np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
        """The source ids and the target ids of the pairs `rows` (numbered over all parts)."""
        src: list[list[int]] = [[] for _ in rows]
        tgt: list[list[int]] = [[] for _ in rows]
        for where, k, local in self._by_part(rows):
            for i, s, t in zip(where, *self.parts[k].pairs(local), strict=True):
                src[i], tgt[i] = s, t
        return src, tgt

    def batch(self, rows: Sequence[int] | np.ndarray) -> Batch:
        """The pairs `rows` (numbered over all parts), in that order, as one padded batch."""
        pieces = [(where, self.parts[k].batch(local)) for where, k, local in self._by_part(rows)]
        return merged(len(rows), pieces)

    def _by_part(self, rows: Sequence[int] | np.ndarray) -> list[tuple[np.ndarray, int, np.ndarray]]:
        """(positions in `rows`, part k, those rows numbered within part k), for each part used."""
        rows = np.asarray(rows, dtype=np.int64)
        part_of = np.searchsorted(self.starts, rows, side="right") - 1  # (B,)
        found = []
        for k in np.unique(part_of):  # a loop over corpora, not over pairs
            where = np.flatnonzero(part_of == k)
            found.append((where, int(k), rows[where] - self.starts[k]))
        return found


def merged(count: int, pieces: Sequence[tuple[np.ndarray, Batch]]) -> Batch:
    """One padded batch of `count` rows from batches of some of them: `(where, batch)` puts the rows of
    `batch` at the positions `where`. The links of batches that have them go along (None if none has)."""
    fields = []
    for name in ("src", "tgt_in", "tgt_out"):
        width = max(getattr(b, name).shape[1] for _, b in pieces)
        out = torch.full((count, width), PAD, dtype=torch.int64)
        for where, b in pieces:
            part = getattr(b, name)
            out[torch.from_numpy(where), : part.shape[1]] = part
        fields.append(out)
    links = [  # each link's row renumbered as the merged batch's
        torch.column_stack([torch.from_numpy(where)[b.links[:, 0]], b.links[:, 1:]])
        for where, b in pieces
        if b.links is not None
    ]
    src, tgt_in, tgt_out = fields
    return Batch(src, tgt_in, tgt_out, torch.cat(links) if links else None)


def log_unknown(name: str, data: ParallelData) -> None:
    """Warn about `<unk>` pieces per side: text the model can neither read nor write."""
    sides = {"src": ("source", data.src), "tgt": ("target", data.tgt)}
    for side, arrays in (sides[key] for key in data.targets.piece_sides):  # label ids are not pieces
        share = arrays.unknown_share()
        if share:
            log.warning(
                "%s %s: %.3f%% of the pieces are <unk>: characters outside the vocabulary; "
                "tokenizer.byte_fallback: true represents them as bytes",
                name,
                side,
                100 * share,
            )


def load_eval_pairs(
    tokenizers: TokenizerPair, src_path: str | Path, tgt_path: str | Path, max_len: int
) -> tuple[ParallelData, list[str], list[str]]:
    """Tokenized validation pairs (truncated to `max_len`, nothing dropped) and the raw lines.

    For a reader, the targets are label ids; labels never seen in training are counted in a warning
    and left out of the loss and accuracy.
    """
    src_lines, tgt_lines = read_parallel(src_path, tgt_path)
    data = encode_eval_pairs(tokenizers, src_lines, tgt_lines, max_len, src_path, tgt_path)
    return data, src_lines, tgt_lines


def encode_eval_pairs(
    tokenizers: TokenizerPair,
    src_lines: list[str],
    tgt_lines: list[str],
    max_len: int,
    src_path: str | Path,
    tgt_path: str | Path,
    prefix: Sequence[int] = (),
) -> ParallelData:
    """`load_eval_pairs` for lines already read from `src_path` and `tgt_path` (named in messages);
    `prefix` (control ids: a multilingual run's language token) starts every source."""
    sources = [[*prefix, *ids] for ids in tokenizers.src.encode(src_lines)]
    tokenizers.targets.check_valid(tokenizers, src_lines, tgt_lines, src_path, tgt_path)
    targets = tokenizers.target_ids(sources, tgt_lines)
    src = [ids[:max_len] for ids in sources]
    tgt = [ids[:max_len] for ids in targets]
    data = ParallelData.from_lists(src, tgt, tokenizers.targets)
    log_unknown("validation", data)
    return data


@dataclass
class Batch:
    """A padded batch. Padding is `PAD` and always on the right."""

    src: Tensor  # (B, S) source ids ending in <eos>
    tgt_in: Tensor  # (B, T) <bos> y: what the decoder reads
    tgt_out: Tensor  # (B, T) y <eos>: what it must predict
    # (L, 3) int64 (row, target piece, source position): reference alignment links (`data.links`);
    # None for a corpus without alignments
    links: Tensor | None = None

    @property
    def num_tgt_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())

    @property
    def num_src_tokens(self) -> int:
        return int((self.src != PAD).sum())

    def to(self, device: torch.device) -> Batch:
        non_blocking = device.type == "cuda"
        return self._each(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> Batch:
        return self._each(Tensor.pin_memory)

    def _each(self, move: Callable[[Tensor], Tensor]) -> Batch:
        """This batch with `move` applied to each of its tensors."""
        links = None if self.links is None else move(self.links)
        return Batch(move(self.src), move(self.tgt_in), move(self.tgt_out), links)


def collate(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Batch:
    """One batch of these id lists, with the teacher-forcing shift (see `ParallelData.batch`)."""
    return ParallelData.from_lists(src, tgt).batch(np.arange(len(src)))
