"""Subword regularization: a pair encoded with segmentations drawn at random, as its key says.

Kudo (2018) samples a unigram model's segmentation among all of them, each with a probability in
proportion to P(x)^alpha (forward-filtering backward-sampling over the lattice: SentencePiece's
`nbest_size=-1`); BPE-dropout (Provilkov et al. 2020) skips each merge of a BPE model with
probability alpha. SentencePiece does both, but from its own generator, which (since SentencePiece
0.2.2) mixes a salt of each process into the seed it is given: the same seed samples otherwise in
another process, so a resumed run could not see the segmentations the interrupted one would have.
s2s therefore samples with SentencePiece's two algorithms itself, on the text as SentencePiece
normalizes it and on the model's own pieces and scores, drawing from a `random.Random` seeded by the
pair's key alone. So the same key gives the same pieces in any process, in any order, whatever was
sampled before. With alpha 0, BPE-dropout merges as SentencePiece encodes; a unigram sample
concentrates on SentencePiece's own segmentation as alpha grows (both tested).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from seq2seq.data.augment import mixed_keys
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import DataError
from seq2seq.special import UNK

UNIGRAM, BPE = 1, 2  # SentencePiece's model types (TrainerSpec.model_type)
NORMAL, USER_DEFINED, UNUSED, BYTE = 1, 4, 5, 6  # some of its piece types (SentencePiece.type)
UNK_PENALTY = 10.0  # a character no piece covers scores this below the lowest piece (SentencePiece's)
SUBWORD_SEED = 0x737562  # a pair's sampling seed: its key mixed with this, unlike any other draw's


class Sampler(Protocol):
    """One side's segmentations drawn at random (`subword_sampler`)."""

    def sample(self, line: str, alpha: float, rng: random.Random) -> list[int]:
        """Ids of `line` in a segmentation drawn with `alpha` from `rng`."""
        ...


def sampled_pair(
    src: Sampler, tgt: Sampler, pair: tuple[str, str], key: int, alpha: float
) -> tuple[list[int], list[int]]:
    """The ids of `pair` (source, target), each side segmented at random with `alpha`, as `key`
    (`seq2seq.data.augment.mixed_keys`) draws: the source first, then the target, from one generator."""
    rng = random.Random(int(mixed_keys(SUBWORD_SEED, key)[0]))
    return src.sample(pair[0], alpha, rng), tgt.sample(pair[1], alpha, rng)


@dataclass(frozen=True)
class Pieces:
    """A SentencePiece model's normal pieces, and what becomes of text that none of them covers."""

    scores: dict[str, tuple[int, float]]  # piece -> (id, score)
    bytes: dict[int, int]  # byte -> the id of its <0xNN> piece; empty without byte fallback
    prefixes: frozenset[str]  # the start of every piece, the whole piece included
    unk_score: float  # a character that no piece covers, in a unigram lattice

    def ids(self, pieces: list[str]) -> list[int]:
        """The ids of `pieces` as SentencePiece writes them: one that is not a piece as its UTF-8 bytes'
        pieces with byte fallback, else as <unk> (a run of them as one)."""
        ids: list[int] = []
        unknown = False  # the piece before was not one
        for piece in pieces:
            hit = self.scores.get(piece)
            if hit is not None:
                ids.append(hit[0])
            elif self.bytes:
                ids += [self.bytes[b] for b in piece.encode("utf-8")]
            elif not unknown:
                ids.append(UNK)
            unknown = hit is None
        return ids


@dataclass(frozen=True)
class UnigramSampler:
    """A unigram model's segmentation drawn from all of them, in proportion to P(x)^alpha."""

    tokenizer: Tokenizer
    pieces: Pieces

    def sample(self, line: str, alpha: float, rng: random.Random) -> list[int]:
        text = self.tokenizer.sp.normalize(line)
        ends = self._lattice(text)
        forward = [0.0] * (len(text) + 1)  # log of the weights of every path over text[:end]
        for end in range(1, len(text) + 1):
            forward[end] = _log_sum([forward[begin] + alpha * score for begin, _, score in ends[end]])
        pieces, end = [], len(text)
        while end > 0:  # backward: the piece that ends here, in proportion to the paths through it
            weights = [
                math.exp(forward[begin] + alpha * score - forward[end]) for begin, _, score in ends[end]
            ]
            begin, piece, _ = ends[end][_draw(weights, rng)]
            pieces.append(piece)
            end = begin
        return self.pieces.ids(pieces[::-1])

    def _lattice(self, text: str) -> list[list[tuple[int, str, float]]]:
        """(begin, piece, score) of each piece of `text` (a character no piece covers: unknown), by the
        position it ends at."""
        ends: list[list[tuple[int, str, float]]] = [[] for _ in range(len(text) + 1)]
        for begin in range(len(text)):
            end = begin + 1
            while end <= len(text) and (piece := text[begin:end]) in self.pieces.prefixes:
                if (hit := self.pieces.scores.get(piece)) is not None:
                    ends[end].append((begin, piece, hit[1]))
                end += 1
            if text[begin] not in self.pieces.scores:
                ends[begin + 1].append((begin, text[begin], self.pieces.unk_score))
        return ends


@dataclass(frozen=True)
class BpeSampler:
    """A BPE model's segmentation with each merge skipped with probability alpha (BPE-dropout)."""

    tokenizer: Tokenizer
    pieces: Pieces

    def sample(self, line: str, alpha: float, rng: random.Random) -> list[int]:
        symbols = list(self.tokenizer.sp.normalize(line))  # merged in place; "" once merged leftwards
        before, after = list(range(-1, len(symbols) - 1)), [*range(1, len(symbols)), -1]
        agenda: list[tuple[float, int, int, int]] = []  # (-score, left, right, characters)

        def propose(left: int, right: int) -> None:
            if left >= 0 and right >= 0 and (hit := self.pieces.scores.get(symbols[left] + symbols[right])):
                heapq.heappush(agenda, (-hit[1], left, right, len(symbols[left]) + len(symbols[right])))

        for right in range(1, len(symbols)):
            propose(right - 1, right)
        while agenda:  # the best merge first, the leftmost of equals, as SentencePiece merges
            _, left, right, size = heapq.heappop(agenda)
            if not symbols[left] or not symbols[right] or len(symbols[left]) + len(symbols[right]) != size:
                continue  # one of the two has been merged since
            if alpha >= 1 or (alpha > 0 and rng.random() < alpha):
                continue  # dropped
            symbols[left], symbols[right] = symbols[left] + symbols[right], ""
            after[left] = after[right]
            if after[right] >= 0:
                before[after[right]] = left
            propose(before[left], left)
            propose(left, after[left])
        return self.pieces.ids([symbol for symbol in symbols if symbol])


def subword_sampler(tokenizer: Tokenizer) -> UnigramSampler | BpeSampler:
    """What samples `tokenizer`'s segmentations, chosen once from its model's type."""
    sp = tokenizer.sp
    kind, types = model_spec(sp.serialized_model_proto())
    if kind not in (UNIGRAM, BPE) or USER_DEFINED in types or UNUSED in types:
        raise DataError(
            f"{tokenizer.path}: subword sampling needs a unigram or BPE model without user-defined or "
            "unused pieces, as s2s trains them"
        )
    normal = [i for i, kind in enumerate(types) if kind == NORMAL]
    scores = {sp.id_to_piece(i): (i, sp.get_score(i)) for i in normal}
    byte_ids = {int(sp.id_to_piece(i)[3:5], 16): i for i, kind in enumerate(types) if kind == BYTE}
    lowest = min((score for _, score in scores.values()), default=0.0)
    prefixes = frozenset(piece[:end] for piece in scores for end in range(1, len(piece) + 1))
    pieces = Pieces(scores, byte_ids, prefixes, lowest - UNK_PENALTY)
    return BpeSampler(tokenizer, pieces) if kind == BPE else UnigramSampler(tokenizer, pieces)


def model_spec(proto: bytes) -> tuple[int, list[int]]:
    """(model type, the type of each piece by id) of a serialized SentencePiece `ModelProto`: its
    pieces are field 1 (each one's type: field 3, NORMAL unless given), its trainer spec field 2 (the
    model type: field 3, UNIGRAM unless given)."""
    kind, types = UNIGRAM, []
    for number, value in _fields(proto):
        if number == 1:
            types.append(next((int(v) for n, v in _fields(bytes(value)) if n == 3), NORMAL))
        elif number == 2:
            kind = next((int(v) for n, v in _fields(bytes(value)) if n == 3), UNIGRAM)
    return kind, types


def _fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field of a serialized protobuf message: an int for a varint, the
    bytes of the others (length-delimited, 32- and 64-bit)."""
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        wire = key & 7
        if wire == 0:
            value, at = _varint(message, at)
            yield key >> 3, value
            continue
        size = {1: 8, 5: 4}.get(wire)
        if size is None:
            assert wire == 2, f"protobuf wire type {wire} is in no SentencePiece model"
            size, at = _varint(message, at)
        yield key >> 3, message[at : at + size]
        at += size


def _varint(message: bytes, at: int) -> tuple[int, int]:
    """The varint at `at`, and where the next field starts."""
    value = shift = 0
    while True:
        byte = message[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def _log_sum(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _draw(weights: list[float], rng: random.Random) -> int:
    """An index drawn in proportion to `weights` (which sum to about 1)."""
    point, total = rng.random() * sum(weights), 0.0
    for i, weight in enumerate(weights):
        total += weight
        if point < total:
            return i
    return len(weights) - 1
