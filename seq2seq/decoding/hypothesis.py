"""What a search finds, and how it is scored: a hypothesis' log-probability over a length normalizer.

Every search (greedy, beam, running: `seq2seq.decoding.search`, `seq2seq.decoding.beam_rule`), every
reader and the CTranslate2 engine give their results as `Hypothesis`es scored by this one rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from torch import Tensor

    from seq2seq.decoding.settings import SearchSettings

NEG_INF = float("-inf")  # log 0: a token never chosen, a beam not alive


@dataclass
class Hypothesis:
    tokens: list[int]  # without <bos>/<eos>
    score: float  # sum of token log-probabilities (with <eos>), divided by the length normalizer


@overload
def length_normalizer(
    tokens: Tensor, settings: SearchSettings, chose_end: Tensor | bool = True
) -> Tensor: ...
@overload
def length_normalizer(tokens: int, settings: SearchSettings, chose_end: bool = True) -> float: ...
@overload
def length_normalizer(tokens: int, settings: SearchSettings, chose_end: Tensor) -> Tensor | float: ...
def length_normalizer(
    tokens: Tensor | int, settings: SearchSettings, chose_end: Tensor | bool = True
) -> Tensor | float:
    """What a hypothesis of `tokens` output tokens (<eos> not among them) has its log-probability
    divided by; `chose_end`: whether it ended by choosing <eos>, or was cut at its length limit.

    `power`: steps ** alpha, the decoded steps counted as CTranslate2 and Hugging Face count them: the
    tokens and a chosen <eos> (an empty hypothesis counts one step, a cut one its tokens). `gnmt`
    (Wu et al. 2016): ((5 + tokens + 1) / 6) ** alpha, the <eos> always counted.
    """
    alpha = settings.length_penalty
    if settings.length_norm == "power":
        steps = tokens + chose_end  # an int, or a tensor when either is one
        return (max(steps, 1) if isinstance(steps, int) else steps.clamp(min=1)) ** alpha
    return ((6 + tokens) / 6) ** alpha
