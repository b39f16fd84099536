"""How long an output may grow: a * |source| + b tokens (`decode.max_len_a`, `max_len_b`), at least
`min_len` + 1 and within the model's positions, <eos> included; long enough for a forced prefix.

One rule, given two ways: over a batch's tensors (s2s's search) and over plain token counts (an
engine given counts, CTranslate2), both in float32, so that they give the same numbers (tested). The
module imports no torch: the tensor functions use their arguments' methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from seq2seq.special import PAD

if TYPE_CHECKING:
    from torch import Tensor

    from seq2seq.decoding.prefix import Forced
    from seq2seq.decoding.settings import SearchSettings


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
    """`max_output_lengths` for sources of `source_tokens` (B,) tokens, <eos> included."""
    limit = (settings.max_len_a * source_tokens + settings.max_len_b).long()  # float32, truncated
    return limit.clamp(min=settings.min_len + 1, max=max_positions - 1)


def prefix_limits(limits: Tensor, prefix_tokens: Tensor, max_positions: int) -> Tensor:
    """Each sentence's longest output (<eos> included), long enough for its prefix and an <eos>."""
    return limits.maximum(prefix_tokens + 1).clamp(max=max_positions - 1)


def output_limits_of_counts(
    source_tokens: Sequence[int],
    settings: SearchSettings,
    max_positions: int,
    prefix_tokens: Sequence[int] | None = None,
) -> list[int]:
    """`output_limits` for sources of `source_tokens` tokens (<eos> included), then `prefix_limits` for
    prefixes of `prefix_tokens` tokens when given: for an engine given counts rather than tensors.

    a * |source| + b is computed in float32, as torch computes it for a tensor of counts: in float64
    some products land on the other side of an integer (1.4 * 45: 63 in float32, 62.99... in float64).
    """
    scaled = np.float32(settings.max_len_a) * np.asarray(source_tokens, dtype=np.float32)
    lengths = (scaled + np.float32(settings.max_len_b)).astype(np.int64).tolist()  # truncated
    limits = [min(max(n, settings.min_len + 1), max_positions - 1) for n in lengths]
    if prefix_tokens is None:
        return limits
    return [min(max(n, p + 1), max_positions - 1) for n, p in zip(limits, prefix_tokens, strict=True)]
