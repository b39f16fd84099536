"""How long an output may grow: a * |source| + b tokens (`decode.max_len_a`, `max_len_b`), at least
`min_len` + 1 and within the model's positions, <eos> included; long enough for a forced prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from seq2seq.decoding.prefix import Forced, prefix_limits
from seq2seq.special import PAD

if TYPE_CHECKING:
    from seq2seq.decoding.search import SearchSettings


def max_output_lengths(src: Tensor, settings: SearchSettings, max_positions: int) -> Tensor:
    """(B,) longest output (in tokens, <eos> included) allowed for each source: a * |src| + b."""
    return output_limits((src != PAD).sum(1), settings, max_positions)


def output_limits_of(
    src: Tensor, settings: SearchSettings, max_positions: int, prefix: Forced | None
) -> Tensor:
    """`max_output_lengths`, made long enough for each sentence's prefix and an <eos>."""
    limits = max_output_lengths(src, settings, max_positions)
    return limits if prefix is None else prefix_limits(limits, prefix.lengths(), max_positions)


def output_limits(source_tokens: Tensor, settings: SearchSettings, max_positions: int) -> Tensor:
    """`max_output_lengths` for sources of `source_tokens` (B,) tokens, <eos> included: the one
    definition, for engines that are given token counts rather than a padded batch."""
    limit = (settings.max_len_a * source_tokens + settings.max_len_b).long()
    return limit.clamp(min=settings.min_len + 1, max=max_positions - 1)
