"""Target prefixes: the first tokens of an output, given instead of searched (interactive translation,
forced first words, autocompletion; CTranslate2's `target_prefix`, fairseq's `--prefix-size`).

A sentence's prefix is forced into the decoder one token per step, through the same cached steps as
the search's own tokens; the search continues from it. The rule CTranslate2 follows, and s2s with it:
the output starts with the prefix; its score sums the log-probabilities of the tokens after the prefix
(and a chosen </s>), and the length normalizer counts the prefix's tokens as steps; the length limit
is the sentence's own, made long enough for the prefix and a </s> (`seq2seq.decoding.length_limits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seq2seq.batching import pad
from seq2seq.special import PAD


@dataclass(frozen=True)
class Forced:
    """The prefix of each sentence of a batch: (B, P) ids right-padded with PAD, P > 0."""

    tokens: Tensor  # (B, P)

    @classmethod
    def of(cls, prefixes: Sequence[Sequence[int]] | None, device: torch.device) -> Forced | None:
        """The batch's prefixes (one per sentence, empty for none), or None when no sentence has one."""
        if not prefixes or not any(prefixes):
            return None
        return cls(pad(prefixes).to(device))

    @property
    def steps(self) -> int:
        """Steps during which some sentence is still forced."""
        return self.tokens.size(1)

    def lengths(self) -> Tensor:
        """(B,) tokens in each sentence's prefix."""
        return (self.tokens != PAD).sum(1)

    def at(self, t: int, sentences: Tensor) -> Tensor:
        """(n,) the token forced at step `t` on each of `sentences` (batch indices), PAD where none is."""
        return self.tokens[sentences, t] if t < self.steps else torch.full_like(sentences, PAD)


def force_greedy(best: Tensor, token: Tensor, forced: Tensor) -> tuple[Tensor, Tensor]:
    """A greedy step's (N,) log-probabilities and tokens where `forced` (N,) gives a token (not PAD):
    that token, at no cost to the score (a prefix is given, not chosen)."""
    forcing = forced != PAD
    return best.masked_fill(forcing, 0.0), torch.where(forcing, forced, token)


def force_beams(row_logp: Tensor, row_tokens: Tensor, forced: Tensor, beams: int) -> tuple[Tensor, Tensor]:
    """A beam step's candidates (n*K, c) where `forced` (n,) gives a sentence's token (not PAD): that
    token as each beam's only candidate, at no cost. Only one beam of a forced sentence is alive (they
    all start as one, and a forced step keeps one candidate), so the prefix stays one hypothesis."""
    forcing = (forced != PAD).repeat_interleave(beams)[:, None]  # (n*K, 1)
    given = torch.full_like(row_logp, float("-inf"))
    given[:, 0] = 0.0
    tokens = forced.repeat_interleave(beams)[:, None].expand_as(row_tokens)
    return torch.where(forcing, given, row_logp), torch.where(forcing, tokens, row_tokens)
