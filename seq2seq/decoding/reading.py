"""A reader's answer in one pass: the best label of each source, or the best tag of each word.

A reader (`seq2seq.models.encoder_only`) writes nothing token by token, so it is not searched; its
answers take the same shape as a search's (one `Hypothesis` per source) so that batching, output
and scoring treat every family alike.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.models.encoder_only import EncoderOnlyTransformer


@torch.no_grad()
def read(model: EncoderOnlyTransformer, src: Tensor) -> list[list[Hypothesis]]:
    """The best label (classify) or each word's best tag (tag) of every source, as one hypothesis.

    src (B, S) ids ending in <eos>, right-padded. A hypothesis's tokens are label ids; its score is
    the model's probability of the label, or of the whole tag sequence (the product of the tags').
    """
    best, ids = model.best_labels(src)  # (B, T)
    keep = model.answered(src)  # (B, T): the label, or each word's first piece
    scores = best.masked_fill(~keep, 0.0).sum(1).exp().tolist()
    return [
        [Hypothesis(row[mask].tolist(), score)] for row, mask, score in zip(ids, keep, scores, strict=True)
    ]
