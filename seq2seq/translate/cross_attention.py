"""The cross-attention of a run's model, teacher-forced on a hypothesis: the last decoder layer's
weights averaged over its heads or, for a run trained with guided alignment, the head it trained
(`alignment_heads` chooses, once per run). `Translator.attention_map` shows it as an `AttentionMap`
(`seq2seq.translate.attention`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import torch

from seq2seq.config import Config
from seq2seq.models.encoder_decoder import Seq2SeqTransformer

M = TypeVar("M")  # what a model's `encode` gives its decoder to attend to


class Attending(Protocol[M]):
    """A model whose decoder attends to its encoded source and can hand out the weights: the
    encoder-decoder and the decoder-only families (a reader has no decoder)."""

    def encode(self, src: torch.Tensor) -> M: ...

    def decode(
        self, tgt: torch.Tensor, memory: M, *, attn_sink: list[torch.Tensor] | None = None
    ) -> torch.Tensor: ...


@dataclass(frozen=True)
class LastLayerMean:
    """Every head of the last decoder layer, averaged: where a run without guided alignment looks."""

    layers: int  # model.decoder_layers
    heads: int  # model.heads: CTranslate2 averages this many of the layer's first heads

    @property
    def layer(self) -> int:
        """The layer, from 0."""
        return self.layers - 1

    def weights(self, model: Attending[Any], src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """(B, T, S), as `cross_attention` gives them."""
        return cross_attention(model, src, tgt_in)


@dataclass(frozen=True)
class GuidedHead:
    """Head 0 of decoder layer `layer`: the head guided alignment trained to follow word alignments."""

    layer: int  # from 0
    heads: int = 1  # CTranslate2 averages this many of the layer's first heads: head 0 alone

    @torch.no_grad()
    def weights(self, model: Attending[Any], src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """(B, T, S) as `cross_attention` gives them, of that one head."""
        assert isinstance(model, Seq2SeqTransformer), "the config's rules guide encoder-decoders only"
        return model.guided_features(src, tgt_in, self.layer)[1]


AlignmentHeads = LastLayerMean | GuidedHead


def alignment_heads(cfg: Config) -> AlignmentHeads:
    """Which cross-attention a run shows as where it looked (the report, the server's /attention, and
    CTranslate2's alignment layer and heads in `s2s export`): the guided head of a run trained with
    train.guided_alignment, else the mean of the last layer's heads."""
    guide = cfg.train.guided_alignment
    if guide.active:
        return GuidedHead(guide.layer_index(cfg.model.decoder_layers))
    return LastLayerMean(cfg.model.decoder_layers, cfg.model.heads)


@torch.no_grad()
def cross_attention(model: Attending[Any], src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    """Where the last decoder layer looks, averaged over heads: (B, T, S) for teacher-forced `tgt_in`.

    src (B, S) source ids ending in <eos>, right-padded with PAD; tgt_in (B, T) starting with <bos>.
    Row t is the attention while predicting target token t; each row sums to 1 over the real source
    tokens and gives padding none. Only this inspection path computes the weights explicitly.
    """
    sink: list[torch.Tensor] = []
    model.decode(tgt_in, model.encode(src), attn_sink=sink)
    return sink[-1]  # (B, T, S)
