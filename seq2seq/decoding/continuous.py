"""Continuous batching: sentences join a running beam search at any step and leave it once settled
(iteration-level scheduling, as LLM servers do), so none waits for a batch it was not part of.

`RunningSearch` is `search.beam_search` with each sentence at its own step: the same candidates,
stopping rule, length limits, prefixes and scores, so a sentence gets the hypotheses the offline
search gives it whichever sentences share its steps (beam 1 is greedy search, as offline). The rows'
keys/values share one cache whose positions are the steps of the running batch (`DecoderCache.starts`
hides from each row the positions before its own first); the token history is aligned with those
positions, PAD before each row's <bos>. Positions no row needs any more are dropped from the front
whenever rows are reordered, so the cache holds at most the oldest running sentence's steps.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, fields
from typing import Generic, Protocol, TypeVar

import torch
from torch import Tensor

from seq2seq.batching import pad
from seq2seq.decoding.decodable import Decodable, SearchCache, SearchMemory
from seq2seq.decoding.limits import output_limits_of
from seq2seq.decoding.prefix import Forced, force_beams
from seq2seq.decoding.search import (
    NEG_INF,
    Hypothesis,
    SearchSettings,
    best_log_probs,
    length_normalizer,
    next_scores,
)
from seq2seq.special import BOS, EOS, PAD

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
    finished: list[Hypothesis] = field(default_factory=list)


@dataclass
class _State:
    """The running blocks' search state: one row per block, as `search.beam_search` keeps it."""

    steps: Tensor  # (n,) long: the steps each block has taken (the offline search's `t`)
    limits: Tensor  # (n,) long: the longest output, <eos> included
    best_possible: Tensor  # (n,) the largest normalizer: that of the length limit
    scores: Tensor  # (n, K) the live beams' sums of log-probabilities
    num_finished: Tensor  # (n,) long
    nth_best: Tensor  # (n,) the nbest-th best finished score
    prefixes: Tensor  # (n, P) long: the ids each block is forced to, PAD-padded

    @classmethod
    def start(cls, limits: Tensor, prefix: Forced | None, settings: SearchSettings) -> _State:
        """The state of sentences that have not taken a step: only the first of the K beams is live."""
        m, device = limits.size(0), limits.device
        scores = torch.full((m, settings.beam), NEG_INF, device=device)
        scores[:, 0] = 0.0  # all beams start identical: expand only the first
        return cls(
            steps=torch.zeros_like(limits),
            limits=limits,
            best_possible=length_normalizer(limits.float() - 1, settings, False),
            scores=scores,
            num_finished=torch.zeros_like(limits),
            nth_best=torch.full((m,), NEG_INF, device=device),
            prefixes=prefix.tokens if prefix is not None else limits.new_full((m, 0), PAD),
        )

    def select(self, keep: Tensor) -> _State:
        return _State(*(getattr(self, f.name)[keep] for f in fields(self)))

    def join(self, other: _State) -> _State:
        """These blocks, then `other`'s; the prefixes padded to the longer."""
        width = max(self.prefixes.size(1), other.prefixes.size(1))
        parts = {
            f.name: torch.cat([getattr(self, f.name), getattr(other, f.name)])
            for f in fields(self)
            if f.name != "prefixes"
        }
        return _State(
            **parts,
            prefixes=torch.cat([_pad_columns(self.prefixes, width), _pad_columns(other.prefixes, width)]),
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
        k, n, settings = self.k, len(self.blocks), self.settings
        memory, cache, state = self._running()
        t = state.steps  # (n,)
        at_limit = state.limits <= t + 1  # (n,) this step is the last allowed
        forced = at_limit.repeat_interleave(k) if self.clock >= min(b.deadline for b in self.blocks) else None
        rows_t = t.repeat_interleave(k)
        logits = next_scores(self.model, self.history, memory, cache, rows_t, forced, settings)
        row_logp, row_tokens = best_log_probs(logits, 2 * k)  # (n*K, c), c = min(2K, V)
        if self.clock < max(b.forced_until for b in self.blocks):
            row_logp, row_tokens = force_beams(row_logp, row_tokens, _forced_at(state.prefixes, t), k)
        per_beam = row_logp.size(1)
        candidates = (state.scores.view(-1, 1) + row_logp).view(n, k * per_beam)
        top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (n, 2K)
        from_beam, top_tokens = top_ids // per_beam, row_tokens.view(n, k * per_beam).gather(1, top_ids)
        ended = (top_tokens == EOS) & top_scores.isfinite()
        ended[:, k:] = False  # an <eos> ranked below K live candidates is never needed
        if ended.any():
            self._finalize(ended, top_scores, from_beam, ~at_limit)
        # the K best candidates that do not end here continue (each beam adds at most one <eos>)
        rank = (top_tokens == EOS).long() * 2 * k + torch.arange(2 * k, device=self.device)
        order = rank.argsort(1)[:, :k]
        state.scores = top_scores.gather(1, order)  # (n, K)
        next_tokens = top_tokens.gather(1, order)
        parent = (torch.arange(n, device=self.device)[:, None] * k + from_beam.gather(1, order)).view(-1)
        live = state.scores.max(1).values  # (n,) the best live beam's sum of log-probabilities
        done = state.nth_best >= live / state.best_possible  # no live beam can reach the nbest-th
        if settings.length_penalty == 0 or k == 1:
            done |= ended[:, 0]
        else:
            done |= (state.num_finished >= k) & (state.nth_best >= live / length_normalizer(t + 1, settings))
        leaving = ((state.num_finished >= settings.nbest) & done) | at_limit
        settled = [self.blocks[b] for b in leaving.nonzero().squeeze(1).tolist()]
        results = [(b.key, sorted(b.finished, key=lambda h: -h.score)[: settings.nbest]) for b in settled]
        if len(settled) == n:
            self._empty()
        else:
            self._advance(leaving, parent, next_tokens)
        return results

    def _finalize(self, ended: Tensor, top_scores: Tensor, from_beam: Tensor, chose: Tensor) -> None:
        """Record the hypotheses that end with <eos> at this step (a loop over those only); `chose`
        (n,): whether a block's <eos> was chosen (False: forced at its limit)."""
        _, _, state = self._running()
        nbest = self.settings.nbest
        block, col = ended.nonzero().unbind(1)
        rows = block * self.k + from_beam[block, col]
        penalty = length_normalizer(state.steps[block], self.settings, chose[block])
        history = self.history[rows].tolist()
        for b, seq, score in zip(
            block.tolist(), history, (top_scores[block, col] / penalty).tolist(), strict=True
        ):
            self.blocks[b].finished.append(Hypothesis(seq[self.blocks[b].start + 1 :], score))
        state.num_finished += ended.sum(1)
        for b in ended.any(1).nonzero().squeeze(1).tolist():  # only the blocks that finished one
            if len(self.blocks[b].finished) >= nbest:
                state.nth_best[b] = sorted(h.score for h in self.blocks[b].finished)[-nbest]

    def _advance(self, leaving: Tensor, parent: Tensor, next_tokens: Tensor) -> None:
        """Drop the blocks `leaving`, move each kept beam's row to its `parent`'s state, and feed
        `next_tokens` (n, K) at the next step; the positions before every kept block's start go."""
        k, n = self.k, len(self.blocks)
        memory, cache, state = self._running()
        keep = (~leaving).nonzero().squeeze(1)
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
