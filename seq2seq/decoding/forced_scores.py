"""Teacher-forced scores: a model's log-probability of each token of given targets.

The distribution is the one a search chooses from (`seq2seq.decoding.search`): never <pad> or <bos>,
no <eos> before `min_len` tokens, renormalized over what is left. So the score of a translation the
search produced is the sum of the token log-probabilities the search accumulated for it (before its
length normalization), unless the search cut it at its length limit, where the <eos> it forced counts
as log 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from seq2seq.batching import pad
from seq2seq.decoding.decodable import Decodable
from seq2seq.special import BOS, EOS, PAD


@torch.no_grad()
def forced_log_probs(
    model: Decodable[Any, Any],
    src: Tensor,
    targets: Sequence[Sequence[int]],
    min_len: int,
    rows: Tensor | None = None,
) -> Tensor:
    """(B, T) float32: the log-probability of each token of `targets` (ids without bos/eos) followed
    by <eos>, given the sources `src` (ending in <eos>, right-padded); 0 past each target's end.

    `src` is (B, S), one source a target; or, with `rows` (B,), the distinct sources, each encoded
    once: target b's source is `src[rows[b]]` (several hypotheses of one line, scored together).
    """
    tgt_in = pad([[BOS, *t] for t in targets]).to(src.device)  # (B, T) what the decoder reads
    tgt_out = pad([[*t, EOS] for t in targets]).to(src.device)  # (B, T) what it must predict
    memory = model.encode(src)
    if rows is not None:
        memory = memory.select(rows.to(src.device))
    logits = model.decode(tgt_in, memory).float()  # (B, T, V)
    logits[..., PAD] = float("-inf")
    logits[..., BOS] = float("-inf")
    logits[:, :min_len, EOS] = float("-inf")
    chosen = logits.gather(2, tgt_out.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return (chosen - logits.logsumexp(-1)).masked_fill(tgt_out == PAD, 0.0)
