"""Parallel text: read and validate, tokenize and filter, bucket into token batches, collate.

The teacher-forcing shift happens once, in `collate`: the decoder reads `<bos> y` and must
predict `y <eos>`. The source gets a trailing `<eos>`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from seq2seq.errors import DataError
from seq2seq.special import BOS, EOS, PAD
from seq2seq.textio import read_lines
from seq2seq.tokenizer import TokenizerPair, count_unknown

log = logging.getLogger(__name__)


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> tuple[list[str], list[str]]:
    """Aligned source and target lines; mismatched line counts or an empty corpus are errors."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: "
            "parallel files must align line by line"
        )
    if not any(s.strip() and t.strip() for s, t in zip(src, tgt)):
        raise DataError(f"{src_path} / {tgt_path}: no sentence pair with text on both sides")
    return src, tgt


@dataclass
class ParallelData:
    """Token ids of aligned sentence pairs (without bos/eos)."""

    src: list[list[int]]
    tgt: list[list[int]]

    def __len__(self) -> int:
        return len(self.src)

    def cost(self, i: int) -> int:
        """Padded length this pair occupies in a batch: the longer of source+eos and bos+target."""
        return max(len(self.src[i]), len(self.tgt[i])) + 1


def load_training_pairs(
    tokenizers: TokenizerPair, src_path: str | Path, tgt_path: str | Path, max_len: int, max_ratio: float
) -> ParallelData:
    """Tokenize the training corpus and drop pairs with an empty side, too many tokens, or a bad ratio."""
    src_lines, tgt_lines = read_parallel(src_path, tgt_path)
    keep = [i for i, (s, t) in enumerate(zip(src_lines, tgt_lines)) if s.strip() and t.strip()]
    src = tokenizers.src.encode([src_lines[i] for i in keep])
    tgt = tokenizers.tgt.encode([tgt_lines[i] for i in keep])
    empty = len(src_lines) - len(keep)
    too_long = bad_ratio = 0
    data = ParallelData([], [])
    for s, t in zip(src, tgt):
        if len(s) > max_len or len(t) > max_len:
            too_long += 1
        elif max_ratio > 0 and max(len(s), len(t)) > max_ratio * max(min(len(s), len(t)), 1):
            bad_ratio += 1
        else:
            data.src.append(s)
            data.tgt.append(t)
    log.info(
        "training pairs: %d read, %d kept; dropped %d with an empty side, %d longer than %d tokens, "
        "%d with length ratio > %g",
        len(src_lines),
        len(data),
        empty,
        too_long,
        max_len,
        bad_ratio,
        max_ratio,
    )
    if not data.src:
        raise DataError(f"{src_path} / {tgt_path}: every pair was filtered out; check data.max_len")
    log_unknown("training", data)
    return data


def log_unknown(name: str, data: ParallelData) -> None:
    """Log the share of `<unk>` pieces per side: text the model can neither read nor write."""
    for side, encoded in (("source", data.src), ("target", data.tgt)):
        unknown, total = count_unknown(encoded)
        if unknown:
            log.warning(
                "%s %s: %d of %d pieces are <unk> (%.3f%%): characters outside the vocabulary; "
                "tokenizer.byte_fallback: true represents them as bytes",
                name,
                side,
                unknown,
                total,
                100 * unknown / max(total, 1),
            )


def load_eval_pairs(
    tokenizers: TokenizerPair, src_path: str | Path, tgt_path: str | Path, max_len: int
) -> tuple[ParallelData, list[str], list[str]]:
    """Tokenized validation pairs (truncated to `max_len`, nothing dropped) and the raw lines."""
    src_lines, tgt_lines = read_parallel(src_path, tgt_path)
    src = [ids[:max_len] for ids in tokenizers.src.encode(src_lines)]
    tgt = [ids[:max_len] for ids in tokenizers.tgt.encode(tgt_lines)]
    data = ParallelData(src, tgt)
    log_unknown("validation", data)
    return data, src_lines, tgt_lines


def token_batches(
    costs: Sequence[int], max_tokens: int, seed: int | None = None, epoch: int = 0
) -> list[list[int]]:
    """Group example indices into batches of at most `max_tokens` padded tokens.

    Examples are sorted by cost so a batch holds similar lengths (little padding). With a seed, ties
    are broken randomly and the batch order is shuffled, reproducibly for each (seed, epoch). Every
    index appears in exactly one batch; an example costing more than `max_tokens` gets a batch alone.
    """
    order = list(range(len(costs)))
    rng = random.Random(f"{seed}-{epoch}") if seed is not None else None
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: costs[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted ascending, so costs[i] is the longest so far in `current`
        if current and (len(current) + 1) * costs[i] > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    if rng is not None:
        rng.shuffle(batches)
    return batches


def shard_batches(batches: list[list[int]], rank: int, world: int) -> list[list[int]]:
    """The batches rank `rank` of `world` processes trains on: disjoint, together covering all.

    Every rank must take the same number of steps, so the largest batches are split in two until
    the count divides evenly; no example is dropped or repeated.
    """
    batches = [list(b) for b in batches]
    while len(batches) % world:
        largest = max(range(len(batches)), key=lambda j: len(batches[j]))
        if len(batches[largest]) < 2:
            raise DataError(f"too few training examples to give each of {world} processes a batch")
        big = batches[largest]
        batches[largest : largest + 1] = [big[: len(big) // 2], big[len(big) // 2 :]]
    return batches[rank::world]


@dataclass
class Batch:
    """A padded batch. Padding is `PAD` and always on the right."""

    src: Tensor  # (B, S) source ids ending in <eos>
    tgt_in: Tensor  # (B, T) <bos> y: what the decoder reads
    tgt_out: Tensor  # (B, T) y <eos>: what it must predict

    @property
    def num_tgt_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())

    @property
    def num_src_tokens(self) -> int:
        return int((self.src != PAD).sum())

    def to(self, device: torch.device) -> Batch:
        non_blocking = device.type == "cuda"
        return Batch(
            *(t.to(device, non_blocking=non_blocking) for t in (self.src, self.tgt_in, self.tgt_out))
        )

    def pin_memory(self) -> Batch:
        return Batch(self.src.pin_memory(), self.tgt_in.pin_memory(), self.tgt_out.pin_memory())


def pad(seqs: Sequence[Sequence[int]]) -> Tensor:
    """(B, max_len) long tensor, right-padded with PAD."""
    return pad_sequence(
        [torch.tensor(s, dtype=torch.long) for s in seqs], batch_first=True, padding_value=PAD
    )


def collate(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]]) -> Batch:
    """Make one batch and apply the teacher-forcing shift."""
    return Batch(
        src=pad([[*s, EOS] for s in src]),
        tgt_in=pad([[BOS, *t] for t in tgt]),
        tgt_out=pad([[*t, EOS] for t in tgt]),
    )


def make_batch(data: ParallelData, indices: Sequence[int]) -> Batch:
    return collate([data.src[i] for i in indices], [data.tgt[i] for i in indices])
