"""Continuous batching: sentences join a running beam search at any step and leave it once settled
(iteration-level scheduling, as LLM servers do), so none waits for a batch it was not part of.

`RunningSearch` follows the beam rule (`beam_rule.Beams`: candidates, finished hypotheses, stopping,
n-best) as `search.beam_search` does, with each sentence at its own step, and the same length limits
and prefixes, so a sentence gets the hypotheses the offline search gives it whichever sentences share
its steps (beam 1 is greedy search, as offline). What is its own is the batch that rows join and
leave: the host's record of each sentence, and the rows of the memory and the cache. The rows'
keys/values share one cache whose positions are the steps of the running batch (`DecoderCache.starts`
hides from each row the positions before its own first); the token history is aligned with those
positions, PAD before each row's <bos>. Positions no row needs any more are dropped from the front
whenever rows are reordered, so the cache holds at most the oldest running sentence's steps.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import torch
from torch import Tensor

from seq2seq.batching import pad
from seq2seq.decoding.beam_rule import Beams, Step, best_first
from seq2seq.decoding.decodable import Decodable, SearchCache, SearchMemory
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.length_limits import output_limits_of
from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.search import next_scores
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import BOS, PAD

Key = TypeVar("Key", bound=Hashable)  # what the caller tells its sentences apart by
Joined = TypeVar("Joined", bound="JoinableMemory")
Extended = TypeVar("Extended", bound="JoinableCache")


class JoinableMemory(SearchMemory, Protocol):
    """Encoded sources that those of joining sentences can be appended to (`Memory.join`)."""

    def join(self: Joined, other: Joined, length: int) -> Joined: ...


class JoinableCache(SearchCache, Protocol):
    """A cache whose rows can be at different steps, and that joining rows are appended to
    (`DecoderCache.join`)."""

    @property
    def length(self) -> int: ...

    def join(self: Extended, other: Extended, beams: int, memory_length: int) -> None: ...


MemoryT = TypeVar("MemoryT", bound=JoinableMemory)
CacheT = TypeVar("CacheT", bound=JoinableCache)


class Joinable(Decodable[MemoryT, CacheT], Protocol[MemoryT, CacheT]):
    """A model whose running batch new sentences can join: `fill_memory` computes a new cache's
    cross-attention keys/values at once (`Seq2SeqTransformer`, an `Ensemble` of them)."""

    def fill_memory(self, cache: CacheT, memory: MemoryT) -> None: ...


@dataclass
class Sentence(Generic[Key]):
    """One sentence to search: source ids ending in <eos>, the target prefix to force (ids, maybe
    none), and the caller's `key` that comes back with its hypotheses."""

    source: Sequence[int]
    prefix: Sequence[int]
    key: Key


@dataclass
class _Block(Generic[Key]):
    """What the host keeps of one running sentence (a block of K rows)."""

    key: Key
    source_length: int  # source positions, <eos> included
    start: int  # the cache position of its <bos>
    deadline: int  # the clock step at which it is at its length limit
    forced_until: int  # the clock step after its last forced token


@dataclass
class _State:
    """The running blocks' state on the device: the beam rule's, and each block's step and prefix."""

    beams: Beams
    steps: Tensor  # (n,) long: the steps each block has taken (the offline search's `t`)
    prefixes: Tensor  # (n, P) long: the ids each block is forced to, PAD-padded

    @classmethod
    def start(cls, limits: Tensor, prefix: Forced | None, settings: SearchSettings) -> _State:
        """The state of sentences that have not taken a step."""
        prefixes = prefix.tokens if prefix is not None else limits.new_full((limits.size(0), 0), PAD)
        lengths = None if prefix is None else prefix.lengths()
        return cls(Beams.start(limits, settings, lengths), torch.zeros_like(limits), prefixes)

    def select(self, keep: Tensor) -> _State:
        return _State(self.beams.select(keep), self.steps[keep], self.prefixes[keep])

    def join(self, other: _State) -> _State:
        """These blocks, then `other`'s; the prefixes padded to the longer."""
        width = max(self.prefixes.size(1), other.prefixes.size(1))
        return _State(
            self.beams.join(other.beams),
            torch.cat([self.steps, other.steps]),
            torch.cat([_pad_columns(self.prefixes, width), _pad_columns(other.prefixes, width)]),
        )


class RunningSearch(Generic[Key, MemoryT, CacheT]):
    """A beam search over a batch that sentences join (`join`) and leave (`step` returns them).

    All sentences share one `SearchSettings`; each is a block of `beam` consecutive rows. What the
    loop needs on the host at each step (deadlines, starts, prefix ends) is kept per block in
    `_Block`s, so a step syncs with the device only as often as a step of the offline search.
    """

    def __init__(
        self, model: Joinable[MemoryT, CacheT], settings: SearchSettings, device: torch.device
    ) -> None:
        if settings.sampling or not settings.use_cache:
            raise ValueError("a running batch decodes with the cache, by beam search or greedily")
        self.model, self.settings, self.device, self.k = model, settings, device, settings.beam
        self._empty()

    def _empty(self) -> None:
        self.blocks: list[_Block[Key]] = []
        self.clock = 0  # steps the running batch has taken since it was last empty
        self.memory: MemoryT | None = None
        self.cache: CacheT | None = None
        self.history = torch.zeros(0, 1, dtype=torch.long, device=self.device)  # (n*K, positions + 1)
        self.state: _State | None = None

    def _running(self) -> tuple[MemoryT, CacheT, _State]:
        """The running batch's memory, cache and search state: the first `join` sets all three."""
        memory, cache, state = self.memory, self.cache, self.state
        assert memory is not None and cache is not None and state is not None, "no sentence runs"
        return memory, cache, state

    def __len__(self) -> int:
        """Sentences in the running batch."""
        return len(self.blocks)

    @property
    def source_tokens(self) -> int:
        """Beam-expanded source tokens (<eos> included) of the running sentences: what a budget counts."""
        return self.k * sum(b.source_length for b in self.blocks)

    @torch.no_grad()
    def join(self, sentences: Sequence[Sentence[Key]]) -> None:
        """Encode `sentences` (one encoder call) and add them to the batch: their first step is the
        next `step`."""
        src = pad([list(s.source) for s in sentences]).to(self.device)  # (m, S)
        prefix = Forced.of([list(s.prefix) for s in sentences], self.device)
        limits = output_limits_of(src, self.settings, self.model.max_positions, prefix)  # (m,)
        memory = self.model.encode(src)
        joining = self.model.new_cache()
        self.model.fill_memory(joining, memory)
        state = _State.start(limits, prefix, self.settings)
        # the joining rows' <bos> is fed at the next step, at the cache's next position
        start = 0 if self.cache is None else self.cache.length
        for s, limit in zip(sentences, limits.tolist(), strict=True):
            deadline, forced_until = self.clock + limit - 1, self.clock + len(s.prefix)
            self.blocks.append(_Block(s.key, len(s.source), start, deadline, forced_until))
        length = max(b.source_length for b in self.blocks)
        if self.cache is None:
            self.memory, self.cache, self.state = memory, self.model.new_cache(), state
        else:
            running_memory, _, running_state = self._running()
            self.memory, self.state = running_memory.join(memory, length), running_state.join(state)
        self.cache.join(joining, self.k, length)
        fresh = torch.full(
            (len(sentences) * self.k, self.history.size(1)), PAD, dtype=torch.long, device=self.device
        )
        fresh[:, -1] = BOS
        self.history = torch.cat([self.history, fresh])

    @torch.no_grad()
    def step(self) -> list[tuple[Key, list[Hypothesis]]]:
        """One decoder step of every running sentence; the sentences settled by it leave the batch and
        come back as (key, their `nbest` best hypotheses, best first)."""
        k, settings = self.k, self.settings
        memory, cache, state = self._running()
        t, beams = state.steps, state.beams  # t (n,): each block's own step
        at_limit = beams.at_limit(t)  # (n,) this step is the last allowed
        forced = at_limit.repeat_interleave(k) if self.clock >= min(b.deadline for b in self.blocks) else None
        rows_t = t.repeat_interleave(k)
        logits = next_scores(self.model, self.history, memory, cache, rows_t, forced, settings)
        forcing = self.clock < max(b.forced_until for b in self.blocks)  # no block is forced otherwise
        given = _forced_at(state.prefixes, t) if forcing else None
        starts = [b.start for b in self.blocks]
        step = beams.advance(logits, given, self.history, t, at_limit, settings, starts)
        leaving = step.leaving.nonzero().squeeze(1).tolist()
        results = [(self.blocks[b].key, best_first(beams.finished[b], settings.nbest)) for b in leaving]
        if len(leaving) == len(self.blocks):
            self._empty()
        else:
            self._advance(step)
        return results

    def _advance(self, step: Step) -> None:
        """Drop the blocks `step` settled, move each kept beam's row to its parent's state, and feed
        its next token at the next step; the positions before every kept block's start go."""
        k, n = self.k, len(self.blocks)
        memory, cache, state = self._running()
        keep = (~step.leaving).nonzero().squeeze(1)
        parent, next_tokens = step.parent, step.tokens
        dropped = keep.numel() < n
        if dropped:
            self.blocks = [self.blocks[b] for b in keep.tolist()]
            parent = parent.view(n, k)[keep].view(-1)
            state, next_tokens = state.select(keep), next_tokens[keep]
            self.memory, self.state = memory.select(keep), state
        drop = min(b.start for b in self.blocks)
        for b in self.blocks:
            b.start -= drop
        history = self.history
        if k > 1 or dropped or drop:  # greedy rows stay in place until some leave
            cache.reorder(parent, keep if dropped else None, drop)
            history = history.index_select(0, parent)[:, drop:]
        self.history = torch.cat([history, next_tokens.view(-1, 1)], dim=1)
        state.steps = state.steps + 1
        self.clock += 1


def _forced_at(prefixes: Tensor, t: Tensor) -> Tensor:
    """(n,) the prefix token each block is forced to at its step `t`, PAD where none is."""
    width = prefixes.size(1)
    if width == 0:
        return torch.full_like(t, PAD)
    at = prefixes.gather(1, t.clamp(max=width - 1)[:, None]).squeeze(1)
    return torch.where(t < width, at, PAD)


def _pad_columns(x: Tensor, width: int) -> Tensor:
    """(n, P) PAD-padded to (n, width)."""
    return torch.cat([x, x.new_full((x.size(0), width - x.size(1)), PAD)], dim=1)
