"""The plain PyTorch baseline the train section compares s2s with: `nn.Transformer` and its embeddings.

It offers what `seq2seq.training.loss.TrainingLoss` reads of a model: `features(src, tgt_in)`, the
states the output projection reads, and that projection as `output`.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.models.layers import sinusoidal_positions
from seq2seq.special import PAD


class ReferenceTransformer(nn.Module):
    """The plain PyTorch baseline: embeddings + sinusoidal positions + `nn.Transformer` + output layer.

    Sizes, dropouts, pre/post-norm and weight sharing follow the s2s `ModelConfig`.
    """

    positions: Tensor  # (max_positions, D): a buffer

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> None:
        super().__init__()
        d = cfg.d_model
        self.tgt_tokens = nn.Embedding(tgt_vocab, d, padding_idx=PAD)
        shared = cfg.share_all_embeddings
        self.src_tokens = self.tgt_tokens if shared else nn.Embedding(src_vocab, d, padding_idx=PAD)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_positions, d), persistent=False)
        self.scale, self.dropout = math.sqrt(d), nn.Dropout(cfg.dropout)
        with warnings.catch_warnings():  # the nested-tensor fast path is for inference only anyway
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            self.transformer = nn.Transformer(
                d_model=d,
                nhead=cfg.heads,
                num_encoder_layers=cfg.encoder_layers,
                num_decoder_layers=cfg.decoder_layers,
                dim_feedforward=cfg.ffn_dim,
                dropout=cfg.dropout,
                batch_first=True,
                norm_first=cfg.norm == "pre",
            )
        _match_dropouts(self.transformer, cfg)
        self.output = nn.Linear(d, tgt_vocab, bias=False)
        if cfg.tie_output:
            self.output.weight = self.tgt_tokens.weight

    def _embed(self, tokens: nn.Embedding, ids: Tensor) -> Tensor:
        """ids (B, T) -> (B, T, D)."""
        return self.dropout(tokens(ids) * self.scale + self.positions[: ids.size(1)])

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits (B, T, V) for src (B, S) and tgt_in (B, T), right-padded with PAD."""
        return self.output(self.features(src, tgt_in))

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """The decoder's last states (B, T, D), which `output` projects to logits; inputs as `forward`.

        nn.Transformer masks have the opposite polarity to s2s: True = may NOT attend.
        """
        src_pad, tgt_pad = src == PAD, tgt_in == PAD  # (B, S), (B, T)
        t = tgt_in.size(1)
        causal = torch.ones(t, t, dtype=torch.bool, device=src.device).triu(1)  # (T, T) True = future
        return self.transformer(
            self._embed(self.src_tokens, src),
            self._embed(self.tgt_tokens, tgt_in),
            tgt_mask=causal,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad,
            tgt_is_causal=True,
        )  # (B, T, D)


def _match_dropouts(transformer: nn.Transformer, cfg: ModelConfig) -> None:
    """nn.Transformer has one dropout rate; set attention and activation dropout as s2s has them."""
    for layer in [*transformer.encoder.layers, *transformer.decoder.layers]:
        layer.dropout.p = cfg.activation_dropout  # between the two feed-forward linears
        layer.self_attn.dropout = cfg.attention_dropout
    for layer in transformer.decoder.layers:
        layer.multihead_attn.dropout = cfg.attention_dropout
