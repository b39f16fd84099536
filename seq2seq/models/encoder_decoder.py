"""The encoder-decoder Transformer: `encode(src) -> Memory`, `decode(tgt, memory, cache) -> logits`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.models.kv_cache import KVCache, LayerCache, MemoryKV, fit_length
from seq2seq.models.layers import DecoderLayer, Dropout, EncoderLayer, sinusoidal_positions
from seq2seq.special import PAD


@dataclass
class Memory:
    """Encoder output for a batch of sources."""

    states: Tensor  # (B, S, D)
    mask: Tensor  # (B, 1, 1, S) bool, True = real source token

    def select(self, rows: Tensor) -> Memory:
        return Memory(self.states.index_select(0, rows), self.mask.index_select(0, rows))

    def join(self, other: Memory, length: int) -> Memory:
        """These rows, then those of `other`, each padded (masked out) or cut to `length` source
        positions: no row's source may be longer."""
        states = [fit_length(m.states, length, dim=1) for m in (self, other)]
        masks = [fit_length(m.mask, length, dim=3) for m in (self, other)]  # pads False
        return Memory(torch.cat(states), torch.cat(masks))


@dataclass
class DecoderCache:
    """Per-layer incremental-decoding state; `length` target positions have been decoded so far.

    With `starts` (one per target row), the rows are at different steps, as when sentences join a
    running batch (`decoding.running_search`): row i's first position is cached at `starts[i]`, the
    positions before are not its own (masked: `self_mask`), and its next position is
    `length - starts[i]`. Without, every row starts at 0. A cache that holds `starts` decodes one
    position per call.
    """

    layers: list[LayerCache]
    starts: Tensor | None = None  # (B,) long

    @property
    def length(self) -> int:
        return self.layers[0].self_kv.length

    def reorder(self, rows: Tensor, memory_rows: Tensor | None, drop: int = 0) -> None:
        """Keep target rows `rows`, in that order: one `index_select` per cached tensor.

        The cross-attention keys/values are per memory row: `memory_rows` keeps those (None: they
        stay as they are, as when beams are reordered within their sentences). The first `drop`
        positions are dropped: no kept row's own (all `starts` are at least `drop`).
        """
        for layer in self.layers:  # a running batch's rows keep room for those that join
            layer.reorder(rows, memory_rows, drop, spare=self.starts is not None)
        if self.starts is not None:
            self.starts = self.starts.index_select(0, rows) - drop

    def join(self, other: DecoderCache, beams: int, memory_length: int) -> None:
        """Append the rows of `other`, a cache of sentences that have decoded nothing yet (its memory
        keys/values filled, `Seq2SeqTransformer.fill_memory`), `beams` target rows per memory row:
        they start at the next position. The memory keys/values are fitted to `memory_length`
        source positions, as `Memory.join`."""
        filled = other.layers[0].memory_kv.stored()
        assert filled is not None, "a joining cache has its memory keys/values (fill_memory)"
        memory_keys, _ = filled  # (B', H, S', Dh)
        count = memory_keys.size(0) * beams
        for mine, theirs in zip(self.layers, other.layers, strict=True):
            mine.self_kv.add_rows(count)
            mine.memory_kv.join(theirs.memory_kv, memory_length)
        new = torch.full((count,), self.length, dtype=torch.long, device=memory_keys.device)
        self.starts = new if self.starts is None else torch.cat([self.starts, new])

    def positions(self) -> Tensor | int:
        """The position the next decoded token has: (B,) per row with `starts`, else one int."""
        return self.length if self.starts is None else self.length - self.starts

    def self_mask(self) -> Tensor | None:
        """(B, 1, 1, length + 1) the cached positions (and the new one) each row's next position may
        attend to: its own; None without `starts` (all of them)."""
        if self.starts is None:
            return None
        slots = torch.arange(self.length + 1, device=self.starts.device)
        return (slots >= self.starts[:, None])[:, None, None, :]


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(d_model) plus sinusoidal positions, then dropout."""

    positions: Tensor  # (max_positions, D): a buffer

    def __init__(self, tokens: nn.Embedding, positions: Tensor, dropout: float) -> None:
        super().__init__()
        self.tokens = tokens
        self.register_buffer("positions", positions, persistent=False)  # (max_positions, D)
        self.scale = math.sqrt(tokens.embedding_dim)
        self.dropout = Dropout(dropout)

    def forward(self, ids: Tensor, offset: int | Tensor = 0) -> Tensor:
        """ids (B, T) -> (B, T, D); positions start at `offset` (the cached length when decoding), or
        with T = 1 at each row's own offset (B,) (`DecoderCache.positions`)."""
        if isinstance(offset, Tensor):
            pos = self.positions[offset][:, None]  # (B, 1, D)
        else:
            pos = self.positions[offset : offset + ids.size(1)]  # (T, D)
        return self.dropout(self.tokens(ids) * self.scale + pos)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.max_positions = cfg.max_positions
        d, pre_norm = cfg.d_model, cfg.norm == "pre"
        positions = sinusoidal_positions(cfg.max_positions, d, cfg.positions)
        tgt_tokens = nn.Embedding(tgt_vocab, d, padding_idx=PAD)
        src_tokens = tgt_tokens if cfg.share_all_embeddings else nn.Embedding(src_vocab, d, padding_idx=PAD)
        self.src_embed = Embedding(src_tokens, positions, cfg.dropout)
        self.tgt_embed = Embedding(tgt_tokens, positions, cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        # post-norm layers already end in a LayerNorm
        self.enc_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.dec_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.output = nn.Linear(d, tgt_vocab, bias=cfg.logits_bias)  # a bias: model.logits_bias
        init_weights(self, d)
        if cfg.tie_output:
            self.output.weight = tgt_tokens.weight

    def encode(self, src: Tensor) -> Memory:
        """src (B, S) ids, right-padded with PAD -> memory (B, S, D)."""
        mask = (src != PAD)[:, None, None, :]  # (B, 1, 1, S)
        x = self.src_embed(src)
        for layer in self.encoder:
            x = layer(x, mask)
        return Memory(self.enc_norm(x), mask)

    def new_cache(self) -> DecoderCache:
        return DecoderCache([LayerCache(KVCache(), MemoryKV()) for _ in self.decoder])

    def fill_memory(self, cache: DecoderCache, memory: Memory) -> None:
        """Compute the cross-attention keys/values of `memory` into `cache` now, not at its first step:
        what `DecoderCache.join` needs of a joining batch."""
        for layer, layer_cache in zip(
            cast("list[DecoderLayer]", list(self.decoder)), cache.layers, strict=True
        ):
            kv = layer_cache.memory_kv
            kv.k, kv.v = layer.cross_attn.memory_keys(memory.states)

    def decode(
        self,
        tgt: Tensor,
        memory: Memory,
        cache: DecoderCache | None = None,
        attn_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """Next-token logits (B, T, V) for target ids `tgt` (B, T).

        Without a cache `tgt` is the whole (teacher-forced) prefix. With a cache it holds only the
        new positions; their offset comes from the cache, which is updated in place. If
        `attn_sink` is a list, each layer appends its head-averaged cross-attention (B, T, S).
        """
        return self.output(self.decoder_states(tgt, memory, cache, attn_sink))

    def decoder_states(
        self,
        tgt: Tensor,
        memory: Memory,
        cache: DecoderCache | None = None,
        attn_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """Decoder states (B, T, D) for `tgt`, as `decode` takes it: what the projection `output` reads."""
        offset = cache.positions() if cache is not None else 0
        self_mask = cache.self_mask() if cache is not None else None
        x = self.tgt_embed(tgt, offset)
        for i, layer in enumerate(self.decoder):
            layer_cache = cache.layers[i] if cache is not None else None
            x = layer(x, memory.states, memory.mask, layer_cache, attn_sink, self_mask)
        return self.dec_norm(x)

    def features(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced decoder states (B, T, D): `forward` without the output projection."""
        return self.decoder_states(tgt_in, self.encode(src))

    def guided_features(self, src: Tensor, tgt_in: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """`features` and the cross-attention weights (B, T, S) of head 0 of decoder layer `layer`
        (from 0), computed explicitly with their gradients: what guided alignment trains. Row t is
        the attention while predicting target token t; padded source columns get none."""
        memory, x = self.encode(src), self.tgt_embed(tgt_in)
        head: list[Tensor] = []  # (B, T, S) once the guided layer has run
        for i, decoder_layer in enumerate(self.decoder):
            x = decoder_layer(x, memory.states, memory.mask, head_sink=head if i == layer else None)
        return self.dec_norm(x), head[0]

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits (B, T, V)."""
        return self.output(self.features(src, tgt_in))


def init_weights(model: nn.Module, d_model: int) -> None:
    """Xavier-uniform linear layers with zero biases; embeddings N(0, d_model^-0.5) with a zero <pad> row."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=d_model**-0.5)
            nn.init.zeros_(module.weight[PAD])


def count_parameters(model: nn.Module) -> int:
    """Distinct trainable parameters (tied tensors counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())
