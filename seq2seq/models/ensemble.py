"""Several models decoding as one: each step averages their next-token log-probabilities.

`Ensemble` has the interface search needs (`encode`, `decode`, `new_cache`, `max_positions`), so
greedy and beam search run on it unchanged; each member keeps its own encoder output and cache. The
members are of one family that decodes: encoder-decoders, which can also join running batches
(`fill_memory`), or decoder-only models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from seq2seq.models.decoder_only import DecoderOnlyTransformer
from seq2seq.models.encoder_decoder import DecoderCache, Seq2SeqTransformer


@dataclass
class EnsembleMemory:
    """One encoder output per member."""

    # each of its member's family's kind (a `Memory`, a decoder-only `Prefix`): only that member reads it
    members: list[Any]

    def select(self, rows: Tensor) -> EnsembleMemory:
        return EnsembleMemory([m.select(rows) for m in self.members])

    def join(self, other: EnsembleMemory, length: int) -> EnsembleMemory:
        return EnsembleMemory([m.join(o, length) for m, o in zip(self.members, other.members, strict=True)])


@dataclass
class EnsembleCache:
    """One decoding cache per member."""

    members: list[DecoderCache]

    @property
    def length(self) -> int:
        return self.members[0].length

    def reorder(self, rows: Tensor, memory_rows: Tensor | None, drop: int = 0) -> None:
        for cache in self.members:
            cache.reorder(rows, memory_rows, drop)

    def join(self, other: EnsembleCache, beams: int, memory_length: int) -> None:
        for cache, theirs in zip(self.members, other.members, strict=True):
            cache.join(theirs, beams, memory_length)


class Ensemble:
    """Models with one vocabulary that decode together: log(mean_i p_i) of the next token."""

    def __init__(self, models: Sequence[Seq2SeqTransformer | DecoderOnlyTransformer]) -> None:
        self.models = list(models)
        self.max_positions = min(m.max_positions for m in self.models)

    def encode(self, src: Tensor) -> EnsembleMemory:
        return EnsembleMemory([m.encode(src) for m in self.models])

    def new_cache(self) -> EnsembleCache:
        return EnsembleCache([m.new_cache() for m in self.models])

    def fill_memory(self, cache: EnsembleCache, memory: EnsembleMemory) -> None:
        for model, c, m in zip(self.models, cache.members, memory.members, strict=True):
            assert isinstance(model, Seq2SeqTransformer), "only encoder-decoders join running batches"
            model.fill_memory(c, m)

    def decode(self, tgt: Tensor, memory: EnsembleMemory, cache: EnsembleCache | None = None) -> Tensor:
        """(B, T, V) log-probabilities, averaged in probability space over the members."""
        caches = cache.members if cache is not None else [None] * len(self.models)
        logp = torch.stack(
            [
                m.decode(tgt, mem, c).float().log_softmax(-1)
                for m, mem, c in zip(self.models, memory.members, caches, strict=True)
            ]
        )  # (M, B, T, V)
        return logp.logsumexp(0) - math.log(len(self.models))

    def eval(self) -> Ensemble:
        for m in self.models:
            m.eval()
        return self
