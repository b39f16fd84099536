"""The decoder-only translator: one causal stack reads `source <sep>`, then writes the target.

It has the interface of the encoder-decoder (`encode`, `new_cache`, `decode`, `decoder_states`,
`features`, `output`), so the trainer, the loss and the search use it unchanged:

- `encode(src)` runs the source once. Sources are aligned to the right (padding moved to the left),
  so the target of every row starts in the same column, and each row's positions count from its
  first real token. It returns each layer's keys/values of the source (`Prefix`).
- `decode(tgt, prefix, cache)` runs target positions; they attend to their row's source and to the
  target so far. The search's first target token, <bos>, is fed as <sep>.
- The loss counts target positions only: `features` returns the states of the target positions.
- With `prefix_lm` the source positions see the whole source (a prefix LM); otherwise they are
  causal too. Target positions are always causal.

Source and target each get half of `max_positions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.models.encoder_decoder import DecoderCache, init_weights
from seq2seq.models.kv_cache import KVCache, LayerCache, MemoryKV
from seq2seq.models.layers import (
    Dropout,
    SelfAttention,
    attention_weights,
    feed_forward,
    residual,
    sinusoidal_positions,
)
from seq2seq.special import PAD, SEP


@dataclass
class Prefix:
    """The encoded sources of a batch, right-aligned (left-padded) in P columns."""

    keys: list[Tensor]  # per layer (B, H, P, Dh)
    values: list[Tensor]
    mask: Tensor  # (B, 1, 1, P) bool, True = real source token
    lengths: Tensor  # (B,) real source tokens: the position of each row's first target token

    def select(self, rows: Tensor) -> Prefix:
        return Prefix(
            [k.index_select(0, rows) for k in self.keys],
            [v.index_select(0, rows) for v in self.values],
            self.mask.index_select(0, rows),
            self.lengths.index_select(0, rows),
        )


class Block(nn.Module):
    """Self-attention and feed-forward: one layer of the stack."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.ffn = feed_forward(cfg)
        self.res_attn, self.res_ffn = residual(cfg), residual(cfg)

    def forward(self, x: Tensor, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
        """x (B, T, D) -> (B, T, D), given its attention's queries (from x) and keys/values (x's,
        after those it may also see), all (B, H, ., Dh), and `mask` (B, 1, T, keys) True = may attend."""
        x = self.res_attn.outer(x, self.attn.attend(queries, keys, values, mask))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))


class DecoderOnlyTransformer(nn.Module):
    positions: Tensor  # (max_positions, D): a buffer

    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> None:
        super().__init__()
        if src_vocab != tgt_vocab:
            raise ValueError("a decoder-only model reads and writes one vocabulary")
        self.cfg = cfg
        self.max_positions = cfg.max_positions // 2  # for the source, and again for the target
        d = cfg.d_model
        self.register_buffer(
            "positions", sinusoidal_positions(cfg.max_positions, d, cfg.positions), persistent=False
        )
        self.tokens = nn.Embedding(tgt_vocab, d, padding_idx=PAD)
        self.scale = math.sqrt(d)
        self.dropout = Dropout(cfg.dropout)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.decoder_layers))
        self.final_norm = nn.LayerNorm(d) if cfg.norm == "pre" else nn.Identity()
        self.output = nn.Linear(d, tgt_vocab, bias=False)
        init_weights(self, d)
        if cfg.tie_output:
            self.output.weight = self.tokens.weight

    def blocks(self) -> list[Block]:
        """The layers, typed: a ModuleList types its items as plain modules."""
        return cast("list[Block]", list(self.layers))

    def _embed(self, ids: Tensor, positions: Tensor) -> Tensor:
        """ids (B, T) at `positions` (B, T) -> (B, T, D)."""
        return self.dropout(self.tokens(ids) * self.scale + self.positions[positions])

    def encode(self, src: Tensor) -> Prefix:
        """src (B, S) ids, right-padded with PAD -> each layer's keys/values of the source, left-padded."""
        lengths = (src != PAD).sum(1)  # (B,)
        width = src.size(1)
        columns = torch.arange(width, device=src.device)
        pads = width - lengths
        shifted = columns[None] - pads[:, None]  # (B, S): the source index shown in each column
        ids = src.gather(1, shifted.clamp(min=0)).masked_fill(shifted < 0, PAD)
        real = ids != PAD  # (B, P)
        visible = real[:, None, None, :]  # (B, 1, 1, P): every real source token
        if not self.cfg.prefix_lm:
            causal = torch.ones(width, width, dtype=torch.bool, device=src.device).tril()
            visible = visible & causal
        # a padding column sees itself, so that no query row is empty (its output is never used)
        mask = visible | torch.eye(width, dtype=torch.bool, device=src.device)
        x = self._embed(ids, shifted.clamp(min=0))
        keys, values = [], []
        for layer in self.blocks():
            q, k, v = layer.attn.heads_of(layer.res_attn.inner(x))
            keys.append(k)
            values.append(v)
            x = layer(x, q, k, v, mask)
        return Prefix(keys, values, real[:, None, None, :], lengths)

    def new_cache(self) -> DecoderCache:
        return DecoderCache([LayerCache(KVCache(), MemoryKV()) for _ in self.layers])

    def decode(
        self,
        tgt: Tensor,
        memory: Prefix,
        cache: DecoderCache | None = None,
        attn_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """Next-token logits (B, T, V) for target ids `tgt` (B, T); as `Seq2SeqTransformer.decode`."""
        return self.output(self.decoder_states(tgt, memory, cache, attn_sink))

    def decoder_states(
        self,
        tgt: Tensor,
        memory: Prefix,
        cache: DecoderCache | None = None,
        attn_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """States (B, T, D) of the target positions `tgt`, which start with <bos> (fed as <sep>).

        Beam search passes one prefix row per sentence and its K beams as K consecutive rows of
        `tgt`. If `attn_sink` is a list, each layer appends its head-averaged attention to the
        source (B, T, S), in the columns of the right-padded source.
        """
        rows, steps = tgt.shape
        beams = rows // memory.lengths.size(0)
        offset = cache.length if cache is not None else 0
        if offset == 0:
            tgt = torch.cat([torch.full_like(tgt[:, :1], SEP), tgt[:, 1:]], dim=1)
        lengths = _per_row(memory.lengths, beams)
        x = self._embed(tgt, lengths[:, None] + offset + torch.arange(steps, device=tgt.device))
        width = memory.mask.size(-1)
        causal = torch.ones(steps, offset + steps, dtype=torch.bool, device=tgt.device).tril(offset)
        source = _per_row(memory.mask, beams).expand(rows, 1, steps, width)
        mask = torch.cat([source, causal.expand(rows, 1, steps, offset + steps)], dim=-1)
        for i, layer in enumerate(self.blocks()):
            q, k, v = layer.attn.heads_of(layer.res_attn.inner(x))
            if cache is not None:
                k, v = cache.layers[i].self_kv.append(k, v)
            keys = torch.cat([_per_row(memory.keys[i], beams), k], dim=2)
            values = torch.cat([_per_row(memory.values[i], beams), v], dim=2)
            if attn_sink is not None:
                attn_sink.append(self._source_attention(q, keys, mask, lengths, width))
            x = layer(x, q, keys, values, mask)
        return self.final_norm(x)

    @staticmethod
    def _source_attention(q: Tensor, keys: Tensor, mask: Tensor, lengths: Tensor, width: int) -> Tensor:
        """Head-averaged weights on the source (B, T, S), moved back to right-padded columns."""
        weights = attention_weights(q, keys, mask).mean(1)[..., :width]  # (B, T, P), left-padded
        columns = torch.arange(width, device=q.device)[None] + (width - lengths)[:, None]  # (B, S)
        moved = weights.gather(2, columns.clamp(max=width - 1)[:, None, :].expand(-1, weights.size(1), -1))
        return moved.masked_fill((columns >= width)[:, None, :], 0.0)

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced states of the target positions (B, T, D): the source is never predicted."""
        return self.decoder_states(tgt_in, self.encode(src))

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits (B, T, V) of the target positions."""
        return self.output(self.features(src, tgt_in))


def _per_row(per_sentence: Tensor, beams: int) -> Tensor:
    """One copy per target row: the K beams of a sentence are K consecutive rows."""
    return per_sentence if beams == 1 else per_sentence.repeat_interleave(beams, dim=0)
