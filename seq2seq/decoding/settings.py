"""How a search is run (`SearchSettings`): the beam, the length rules, the constraints and sampling.

A value of its own, apart from the search, so that an engine that is not s2s's decoder (CTranslate2)
and what only describes a search (options, requests) hold it without importing torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from seq2seq.config import DecodeConfig


@dataclass(frozen=True)
class SearchSettings:
    beam: int = 5
    nbest: int = 1
    length_penalty: float = 1.0  # alpha of the length normalization; 0 = none
    length_norm: str = "power"  # one of config.decode.LENGTH_NORMS: see `hypothesis.length_normalizer`
    patience: float = 1.0  # >= 1: a beam search ends after round(beam x patience) hypotheses (`beam_rule`)
    max_len_a: float = 1.5
    max_len_b: int = 10
    min_len: int = 1
    no_repeat_ngram: int = 0  # never repeat an n-gram of this size within a hypothesis (0 = off)
    sampling: bool = False  # draw each token instead of taking the best (beam 1 only)
    temperature: float = 1.0
    top_k: int = 0  # sample among the k most likely tokens (0 = all)
    top_p: float = 1.0  # sample among the most likely tokens whose probabilities add up to p
    seed: int | None = None  # sampling seed (None = torch's global generator)
    use_cache: bool = True

    @property
    def finished_wanted(self) -> int:
        """Finished hypotheses that end a beam search under length normalization: beam x patience,
        rounded half up as CTranslate2 rounds it (`std::round`)."""
        return math.floor(self.beam * self.patience + 0.5)


def config_search(decode: DecodeConfig) -> SearchSettings:
    """The search settings a run's `decode` config gives, before any command line asks for more."""
    return SearchSettings(
        beam=decode.beam,
        length_penalty=decode.length_penalty,
        length_norm=decode.length_norm,
        patience=decode.patience,
        max_len_a=decode.max_len_a,
        max_len_b=decode.max_len_b,
        min_len=decode.min_len,
        no_repeat_ngram=decode.no_repeat_ngram,
    )
