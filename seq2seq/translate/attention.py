"""Where a translation looked: the cross-attention of the run's alignment heads (the last decoder
layer's, or the head guided alignment trained), teacher-forced on a hypothesis.

What the HTML report draws and the server's /attention answers; decoding itself never computes
attention weights explicitly. Each engine finds its own (`Engine.attention_map`): s2s's decoder in
`seq2seq.translate.cross_attention`, CTranslate2 in `seq2seq.ct2.runtime`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class AttentionMap:
    source: list[str]  # source subword pieces, then </s>
    target: list[str]  # the pieces the decoder predicted, then </s>
    weights: np.ndarray  # (T, S) float32, rows sum to 1
