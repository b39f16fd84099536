"""The beam rule: how a beam search takes its candidates, finishes hypotheses, stops and ranks its
n-best, one step at a time, for sentences that may each be at a step of their own.

Both beam searches follow it: the offline one (`search.beam_search`, a batch that only shrinks) and
the running one (`continuous.RunningSearch`, a batch that sentences join and leave at any step).
Each loop keeps only its own bookkeeping: which rows its memory and cache hold, where each row's
tokens start, when it can spare a sync with the device. The rule is a module of its own, below both
loops, so that neither owns what the other must follow: the two give a sentence the same hypotheses
because there is one rule, not two kept equal by tests.

The rule, CTranslate2's (so that both engines give a request the same n-best: `ct2.runtime` passes
the patience on). A sentence's K beams advance together: of their 2K best candidates, an <eos> among
the first K finishes a hypothesis, the K best others live on. At the last step its length limit
allows, the first K candidates all finish, those without <eos> cut there. A sentence is settled then,
or once it has `nbest` finished hypotheses and
- with length normalization (alpha > 0): round(K x patience) of them (`SearchSettings.finished_wanted`);
- without it (alpha 0), or with beam 1: the best candidate of some step was <eos>.
Patience 1 stops as soon as K unlikely early <eos> (ranked in the top K behind one strong beam) have
ended, while a far better hypothesis is still growing: `decode.patience` defaults to 2, chosen on
validation sets (docs/decoding.md). A sentence also settles, with the same n-best, once its
`nbest`-th best finished score is at least what its best live beam could still reach
(log-probabilities only fall; the normalizer is at most that of the length limit): what finishes
later could not enter its n-best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from seq2seq.decoding.hypothesis import NEG_INF, Hypothesis, length_normalizer
from seq2seq.decoding.prefix import force_beams
from seq2seq.special import EOS, PAD

if TYPE_CHECKING:
    from seq2seq.decoding.settings import SearchSettings


def best_log_probs(logits: Tensor, count: int) -> tuple[Tensor, Tensor]:
    """The `count` most likely tokens of each row of `logits` (N, V) and their log-probabilities, both
    (N, count): a top-k and one log-sum-exp instead of the whole (N, V) log-softmax.

    `logits` is used up: the log-sum-exp runs in place, from the maximum the top-k already found.
    """
    best, tokens = logits.topk(min(count, logits.size(1)), dim=1)
    top = best[:, :1]  # (N, 1) each row's maximum
    return best - logits.sub_(top).exp_().sum(1, keepdim=True).log_().add_(top), tokens


def best_first(finished: list[Hypothesis], nbest: int) -> list[Hypothesis]:
    """A settled sentence's result: the `nbest` best of its finished hypotheses, best first."""
    return sorted(finished, key=lambda h: -h.score)[:nbest]


@dataclass(frozen=True)
class Step:
    """What one step of the rule decided for n sentences of K beams."""

    parent: Tensor  # (n*K,) the row each beam continues: its keys/values and tokens move there
    tokens: Tensor  # (n, K) the token each beam feeds at the next step
    leaving: Tensor  # (n,) bool: settled, or at its length limit: the sentence's search is over


@dataclass
class Beams:
    """The beam-search state of n sentences, each a block of K beams: one row per sentence."""

    limits: Tensor  # (n,) long: the longest output, <eos> included
    best_possible: Tensor  # (n,) the largest normalizer: that of the length limit
    scores: Tensor  # (n, K) the live beams' sums of log-probabilities
    num_finished: Tensor  # (n,) long
    nth_best: Tensor  # (n,) the nbest-th best finished score
    best_ended: Tensor  # (n,) bool: the best candidate of some step was <eos>
    prefix_lengths: Tensor  # (n,) long: the tokens each sentence is given before it searches (0: none)
    finished: list[list[Hypothesis]]  # each sentence's, on the host (`select`/`join` share the lists)

    @classmethod
    def start(cls, limits: Tensor, settings: SearchSettings, prefix_lengths: Tensor | None = None) -> Beams:
        """Sentences with output limits `limits` (n,) and prefixes of `prefix_lengths` (n,) tokens (None:
        no prefix) that have taken no step: only the first of the K beams is live."""
        n, device = limits.size(0), limits.device
        scores = torch.full((n, settings.beam), NEG_INF, device=device)
        scores[:, 0] = 0.0  # all beams start identical: expand only the first
        return cls(
            limits=limits,
            best_possible=length_normalizer(limits.float() - 1, settings, False),
            scores=scores,
            num_finished=torch.zeros_like(limits),
            nth_best=torch.full((n,), NEG_INF, device=device),
            best_ended=torch.zeros(n, dtype=torch.bool, device=device),
            prefix_lengths=torch.zeros_like(limits) if prefix_lengths is None else prefix_lengths,
            finished=[[] for _ in range(n)],
        )

    def __len__(self) -> int:
        return self.scores.size(0)

    def at_limit(self, t: int | Tensor) -> Tensor:
        """(n,) whether step `t` (the same for all, or (n,) each sentence's) is the last allowed."""
        return self.limits <= t + 1

    def select(self, keep: Tensor) -> Beams:
        """The sentences `keep` (n',) in that order."""
        kept = {name: getattr(self, name)[keep] for name in self._on_device()}
        return replace(self, **kept, finished=[self.finished[i] for i in keep.tolist()])

    def join(self, other: Beams) -> Beams:
        """These sentences, then `other`'s."""
        both = {name: torch.cat([getattr(self, name), getattr(other, name)]) for name in self._on_device()}
        return replace(self, **both, finished=self.finished + other.finished)

    @classmethod
    def _on_device(cls) -> list[str]:
        """The fields that are tensors: all but `finished`."""
        return [f.name for f in fields(cls) if f.name != "finished"]

    def advance(
        self,
        logits: Tensor,
        forced: Tensor | None,
        history: Tensor,
        t: int | Tensor,
        at_limit: Tensor,
        settings: SearchSettings,
        starts: Sequence[int] | None = None,
    ) -> Step:
        """One step of every sentence from its beams' next-token `logits` (n*K, V), used up
        (`search.next_scores`). `forced` (n,): the prefix token each sentence is given (PAD: none;
        None: no sentence is); `history` (n*K, T): the tokens each row has fed, sentence i's <bos> at
        column `starts[i]` (None: 0); `t`: the step, the same for all or (n,) each sentence's;
        `at_limit`: `self.at_limit(t)`. Records the hypotheses that end here."""
        n, k = self.scores.shape
        # a sentence's 2K best candidates are among the 2K best tokens of each of its K beams
        row_logp, row_tokens = best_log_probs(logits, 2 * k)  # (n*K, c), c = min(2K, V)
        if forced is not None:
            row_logp, row_tokens = force_beams(row_logp, row_tokens, forced, k)
        per_beam = row_logp.size(1)
        candidates = (self.scores.view(-1, 1) + row_logp).view(n, k * per_beam)
        top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (n, 2K)
        from_beam, top_tokens = top_ids // per_beam, row_tokens.view(n, k * per_beam).gather(1, top_ids)
        top_scores, top_tokens = self._after_prefix(top_scores, top_tokens, t)
        last = self.limits <= t + 2  # (n,) the last step with a choice: the first K candidates all end
        ended = ((top_tokens == EOS) | last[:, None]) & top_scores.isfinite()
        ended[:, k:] = False  # an <eos> ranked below K live candidates is never needed
        if ended.any():
            self._finish(ended, top_scores, from_beam, top_tokens, history, t, ~at_limit, settings, starts)
        # the K best candidates that do not end here continue (each beam adds at most one <eos>)
        rank = (top_tokens == EOS).long() * 2 * k + torch.arange(2 * k, device=logits.device)
        order = rank.argsort(1)[:, :k]
        self.scores = top_scores.gather(1, order)  # (n, K)
        parent = (torch.arange(n, device=logits.device)[:, None] * k + from_beam.gather(1, order)).view(-1)
        self.best_ended |= ended[:, 0]
        return Step(parent, top_tokens.gather(1, order), self._settled(settings) | last)

    def _after_prefix(self, top_scores: Tensor, top_tokens: Tensor, t: int | Tensor) -> tuple[Tensor, Tensor]:
        """At the first step after a sentence's prefix, only its best candidate may be <eos>: each other
        <eos> among its 2K candidates becomes a dead candidate (-inf, <pad>) in its place, as in
        CTranslate2 (there the prefix leaves one live beam, whose <eos> would otherwise end short
        hypotheses that beat the others without length normalization)."""
        just_free = (self.prefix_lengths > 0) & (self.prefix_lengths == t)  # (n,)
        dead = just_free[:, None] & (top_tokens == EOS)
        dead[:, 0] = False
        return top_scores.masked_fill(dead, NEG_INF), top_tokens.masked_fill(dead, PAD)

    def _finish(
        self,
        ended: Tensor,
        top_scores: Tensor,
        from_beam: Tensor,
        top_tokens: Tensor,
        history: Tensor,
        t: int | Tensor,
        chose: Tensor,
        settings: SearchSettings,
        starts: Sequence[int] | None,
    ) -> None:
        """Record the hypotheses that end at this step (a loop over those only): with <eos>, `t` tokens
        before it, or cut at the last step with a choice, `t` + 1 tokens; `chose` (n,): whether a
        sentence's <eos> was chosen (False: forced at its limit)."""
        k = self.scores.size(1)
        block, col = ended.nonzero().unbind(1)
        rows = block * k + from_beam[block, col]
        token = top_tokens[block, col]
        cut = token != EOS
        length = (t[block] if isinstance(t, Tensor) else t) + cut.long()
        scores = (top_scores[block, col] / length_normalizer(length, settings, chose[block] & ~cut)).tolist()
        blocks = block.tolist()
        found = zip(blocks, history[rows].tolist(), token.tolist(), cut.tolist(), scores, strict=True)
        for b, seq, last, was_cut, score in found:
            start = 0 if starts is None else starts[b]
            self.finished[b].append(Hypothesis(seq[start + 1 :] + [last] * was_cut, score))
        self.num_finished += ended.sum(1)
        for b in dict.fromkeys(blocks):  # only the sentences that finished a hypothesis
            if len(self.finished[b]) >= settings.nbest:
                self.nth_best[b] = sorted(h.score for h in self.finished[b])[-settings.nbest]

    def _settled(self, settings: SearchSettings) -> Tensor:
        """(n,) whether each sentence is settled by the stopping rule (the module's)."""
        live = self.scores.max(1).values  # (n,) the best live beam's sum of log-probabilities
        done = self.nth_best >= live / self.best_possible  # no live beam can reach the nbest-th
        if settings.length_penalty == 0 or self.scores.size(1) == 1:
            done |= self.best_ended
        else:
            done |= self.num_finished >= settings.finished_wanted
        return (self.num_finished >= settings.nbest) & done
