"""The `decode` section: the defaults of `s2s translate`, `s2s evaluate` and `s2s serve`."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Literal

from seq2seq.config.bounds import (
    MAX_BATCH_TOKENS,
    MAX_BEAM,
    MAX_LENGTH_PENALTY,
    MAX_PATIENCE,
    MAX_POSITIONS,
)
from seq2seq.config.rules import broken

# how beam search divides a hypothesis' log-probability by its length (hypothesis.length_normalizer):
# power: steps ** alpha, a chosen <eos> a step (CTranslate2, Hugging Face); gnmt: ((5 + length) / 6) ** alpha
# (Wu et al. 2016)
LengthNorm = Literal["power", "gnmt"]
LENGTH_NORMS: tuple[str, ...] = typing.get_args(LengthNorm)


@dataclass(frozen=True)
class DecodeConfig:
    """Defaults for `s2s translate` and `s2s evaluate` (each can be overridden on the command line)."""

    beam: int = 5  # 1 - 256: beam size (1 = greedy)
    length_penalty: float = 1.0  # alpha of the length normalization; 0 = plain sum of log-probabilities
    # how a hypothesis' log-probability is divided by its length: power = steps ** alpha (CTranslate2's
    # and Hugging Face's rule, a chosen </s> a step), gnmt = ((5 + length + 1) / 6) ** alpha
    length_norm: LengthNorm = "power"
    # >= 1: beam search ends once beam x patience hypotheses have ended (rounded; without length
    # normalization, once the best beam has ended): CTranslate2's rule, run by both engines
    patience: float = 2.0
    max_len_a: float = 1.5  # >= 0: longest output = a x source tokens + b
    max_len_b: int = 10  # >= 0: the b of max_len_a
    min_len: int = 1  # shortest output in tokens, below model.max_positions - 1 (1: no empty output)
    no_repeat_ngram: int = 0  # never repeat an n-gram of this size in one translation (0 = off)
    max_tokens: int = 4000  # source tokens per decoding batch (beam-expanded: divided by the beam)
    # true: the export cache may keep a lexical shortlist where it costs no BLEU on val: faster, but a
    # line's candidates are then those of its whole batch, so its translation can depend on the
    # other lines decoded with it (off: every line is translated as if alone)
    shortlist: bool = False

    def problems(self, *, max_positions: int) -> list[str]:
        """Every broken rule of this section; `max_positions` is model.max_positions."""
        return broken(
            [
                (not 1 <= self.beam <= MAX_BEAM, f"decode.beam: must be in [1, {MAX_BEAM}]"),
                (
                    not 0 <= self.length_penalty <= MAX_LENGTH_PENALTY,
                    f"decode.length_penalty: must be in [0, {MAX_LENGTH_PENALTY:g}] (length ** alpha must "
                    "stay a finite number)",
                ),
                (
                    not 1 <= self.patience <= MAX_PATIENCE,
                    f"decode.patience: must be in [1, {MAX_PATIENCE:g}] (beam x patience hypotheses end "
                    "a search)",
                ),
                (
                    self.max_len_a < 0 or self.max_len_b < 0,
                    "decode.max_len_a: max_len_a and max_len_b must be >= 0",
                ),
                *(
                    (
                        value > MAX_POSITIONS,
                        f"decode.{key}: must be <= {MAX_POSITIONS} (no output is longer)",
                    )
                    for key, value in (
                        ("max_len_a", self.max_len_a),
                        ("max_len_b", self.max_len_b),
                        ("no_repeat_ngram", self.no_repeat_ngram),
                    )
                ),
                (
                    not 0 <= self.min_len < max_positions - 1,
                    "decode.min_len: must be >= 0 and < model.max_positions - 1",
                ),
                (
                    not 1 <= self.max_tokens <= MAX_BATCH_TOKENS,
                    f"decode.max_tokens: must be in [1, {MAX_BATCH_TOKENS}]",
                ),
                (self.no_repeat_ngram < 0, "decode.no_repeat_ngram: must be >= 0"),
            ]
        )


@dataclass(frozen=True)
class DecodeChoice:
    """A beam and length penalty chosen for a model (on val, as `s2s select` chooses them) to stand as
    its export's decode defaults in place of its run's; None leaves the run's."""

    beam: int | None = None
    length_penalty: float | None = None

    def over(self, decode: DecodeConfig) -> DecodeConfig:
        """`decode` with this choice's values in place of its own, where this choice has them."""
        given = {name: value for name, value in dataclasses.asdict(self).items() if value is not None}
        return dataclasses.replace(decode, **given)


RUN_DECODING = DecodeChoice()  # no choice: the run's own decode defaults
