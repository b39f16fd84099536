"""Transformer building blocks: attention (its caches in `cache.py`), feed-forward, layers, positions.

Mask polarity everywhere: True = may attend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.config import ModelConfig
from seq2seq.models.kv_cache import KVCache, LayerCache, MemoryKV


def sinusoidal_positions(length: int, dim: int, layout: str = "interleaved") -> Tensor:
    """(length, dim) sinusoidal position encodings of "Attention Is All You Need".

    `layout` (`model.positions`): interleaved puts the sine and cosine of each frequency side by side
    (columns 2i, 2i + 1); concatenated puts every sine first, then every cosine (MarianMT's table).
    """
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)  # (L, 1)
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))  # (D/2,)
    sin, cos = torch.sin(pos * freq), torch.cos(pos * freq)  # (L, D/2) each
    if layout == "concatenated":
        return torch.cat([sin, cos], dim=1)
    table = torch.zeros(length, dim)
    table[:, 0::2] = sin
    table[:, 1::2] = cos
    return table


# `model.activation`: its function
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "swish": F.silu, "gelu": F.gelu}


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, T, D) -> (B, H, T, D/H)."""
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, Dh) -> (B, T, H*Dh)."""
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


def fold_beams(x: Tensor, beams: int) -> Tensor:
    """(B, H, T, Dh) with B = N x beams, beam-major within a sentence -> (N, H, beams x T, Dh)."""
    if beams == 1:
        return x
    b, h, t, dh = x.shape
    return x.view(b // beams, beams, h, t, dh).transpose(1, 2).reshape(b // beams, h, beams * t, dh)


def unfold_beams(x: Tensor, beams: int) -> Tensor:
    """The inverse of `fold_beams`: (N, H, beams x T, Dh) -> (N x beams, H, T, Dh)."""
    if beams == 1:
        return x
    n, h, bt, dh = x.shape
    return x.view(n, h, beams, bt // beams, dh).transpose(1, 2).reshape(n * beams, h, bt // beams, dh)


def attention_weights(q: Tensor, k: Tensor, mask: Tensor | None) -> Tensor:
    """Explicit softmax(q k^T / sqrt(Dh)), (B, H, Tq, Tk) in fp32; for inspection and for the one head
    guided alignment trains, never on the fast path."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.float().softmax(-1)


class SelfAttention(nn.Module):
    """Multi-head self-attention with a fused QKV projection; causal when used in the decoder."""

    def __init__(self, d_model: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(
        self, x: Tensor, pad_mask: Tensor | None = None, causal: bool = False, cache: KVCache | None = None
    ) -> Tensor:
        """x (B, T, D). `pad_mask` (B, 1, 1, T), True = real token (encoder only); with a cache and
        one new position, (B, 1, 1, cached + 1): the positions each row may attend to.

        With a cache, `x` holds only the new positions and attends to everything cached before
        them. Without one, a causal layer needs no padding mask: padding is on the right, so a
        real position never sees a padded one under the causal rule.
        """
        q, k, v = self.heads_of(x)
        mask, is_causal = pad_mask, causal
        if cache is not None:
            start = cache.length
            k, v = cache.append(k, v)  # (B, H, start + T, Dh)
            is_causal = False
            if causal and x.size(1) > 1:
                mask = torch.ones(x.size(1), k.size(2), dtype=torch.bool, device=x.device).tril(start)
        return self.attend(q, k, v, mask, is_causal)

    def heads_of(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values (B, H, T, Dh) of x (B, T, D): one fused projection."""
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        return q, k, v

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool = False) -> Tensor:
        """softmax(q k^T / sqrt(Dh)) v over the heads, then the output projection: (B, Tq, D)."""
        drop = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop, is_causal=is_causal)
        return self.out(merge_heads(y))


class CrossAttention(nn.Module):
    """Multi-head attention from decoder positions to the encoder memory (fused K/V projection)."""

    def __init__(self, d_model: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        mem_mask: Tensor,
        cache: MemoryKV | None = None,
        attn_sink: list[Tensor] | None = None,
        head_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """x (B, T, D), memory (B, S, D), mem_mask (B, 1, 1, S) True = real source token.

        With a cache, the memory's keys/values are computed on the first call and reused after.
        If `attn_sink` is a list, the head-averaged weights (B, T, S) are appended to it. If
        `head_sink` is a list, head 0's weights (B, T, S) are computed explicitly, with their
        gradients, appended to it, and make that head's output (guided alignment); the other heads
        stay fused. Without it, every head is one fused call.
        """
        stored = cache.stored() if cache is not None else None
        if stored is not None:
            k, v = stored
        else:
            k, v = self.memory_keys(memory)
            if cache is not None:
                cache.k, cache.v = k, v
        q = split_heads(self.q(x), self.heads)  # (B, H, T, Dh)
        # beam search keeps one memory per sentence: its K beams' queries attend to it together
        beams = q.size(0) // k.size(0)
        q = fold_beams(q, beams)  # (B/K, H, K*T, Dh)
        drop = self.dropout if self.training else 0.0
        if head_sink is None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mem_mask, dropout_p=drop)
        else:
            y = self._explicit_first_head(q, k, v, mem_mask, drop, head_sink)
        if attn_sink is not None:
            weights = attention_weights(q, k, mem_mask).mean(1, keepdim=True)  # (B/K, 1, K*T, S)
            attn_sink.append(unfold_beams(weights, beams).squeeze(1))
        return self.out(merge_heads(unfold_beams(y, beams)))

    @staticmethod
    def _explicit_first_head(
        q: Tensor, k: Tensor, v: Tensor, mask: Tensor, drop: float, sink: list[Tensor]
    ) -> Tensor:
        """The heads' outputs (B, H, T, Dh), head 0's from weights computed here (appended to `sink`
        as (B, T, S) fp32, with their gradients), dropped out as the fused kernel drops them."""
        weights = attention_weights(q[:, :1], k[:, :1], mask)  # (B, 1, T, S)
        sink.append(weights.squeeze(1))
        first = F.dropout(weights, drop, training=drop > 0).to(v.dtype) @ v[:, :1]  # (B, 1, T, Dh)
        if q.size(1) == 1:
            return first
        rest = F.scaled_dot_product_attention(q[:, 1:], k[:, 1:], v[:, 1:], attn_mask=mask, dropout_p=drop)
        return torch.cat([first, rest], dim=1)

    def memory_keys(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """The keys and values (B, H, S, Dh) of memory (B, S, D): one fused projection."""
        k, v = (split_heads(t, self.heads) for t in self.kv(memory).chunk(2, dim=-1))
        return k, v


class Dropout(nn.Module):
    """`nn.Dropout` with a faster mask on the CPU; elsewhere it is `F.dropout` (fused on CUDA).

    On a CPU, the `bernoulli_` that `F.dropout` draws its mask with runs at a third of the speed of
    `rand_like` (9.4 vs 3.2 ms per million values, 2 threads: 11% of a training step's time). The mask
    here is the same Bernoulli(1 - p) draw from the same generator, kept as bool for the backward.
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        if x.device.type != "cpu" or self.p >= 1:
            return F.dropout(x, self.p, training=True)
        return _CpuDropout.apply(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class _CpuDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float) -> Tensor:
        keep = torch.rand_like(x, dtype=torch.float32) >= p
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return x.mul(keep).mul_(ctx.scale)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (keep,) = ctx.saved_tensors
        return grad.mul(keep).mul_(ctx.scale), None


class FeedForward(nn.Module):
    """down(dropout(activation(up(x)))); `activation` is a name of `ACTIVATIONS`."""

    def __init__(
        self, d_model: int, ffn_dim: int, activation_dropout: float, activation: str = "relu"
    ) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d_model, ffn_dim), nn.Linear(ffn_dim, d_model)
        self.dropout = Dropout(activation_dropout)
        self.activation = activation
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        return self.down(self.dropout(self.act(self.up(x))))


def feed_forward(cfg: ModelConfig) -> FeedForward:
    return FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation_dropout, cfg.activation)


class Residual(nn.Module):
    """x + dropout(f(norm(x))) for pre-norm; norm(x + dropout(f(x))) for post-norm."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool) -> None:
        super().__init__()
        self.norm, self.dropout, self.pre_norm = nn.LayerNorm(d_model), Dropout(dropout), pre_norm

    def inner(self, x: Tensor) -> Tensor:
        """What the sublayer reads."""
        return self.norm(x) if self.pre_norm else x

    def outer(self, x: Tensor, y: Tensor) -> Tensor:
        """Combine the sublayer's output `y` with its input `x`."""
        out = x + self.dropout(y)
        return out if self.pre_norm else self.norm(out)


def residual(cfg: ModelConfig) -> Residual:
    return Residual(cfg.d_model, cfg.dropout, pre_norm=cfg.norm == "pre")


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn = SelfAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.ffn = feed_forward(cfg)
        self.res_attn, self.res_ffn = (residual(cfg) for _ in range(2))

    def forward(self, x: Tensor, pad_mask: Tensor) -> Tensor:
        """x (B, S, D); pad_mask (B, 1, 1, S), True = real token."""
        x = self.res_attn.outer(x, self.attn(self.res_attn.inner(x), pad_mask=pad_mask))
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = SelfAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.cross_attn = CrossAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.ffn = feed_forward(cfg)
        self.res_self, self.res_cross, self.res_ffn = (residual(cfg) for _ in range(3))

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        mem_mask: Tensor,
        cache: LayerCache | None = None,
        attn_sink: list[Tensor] | None = None,
        self_mask: Tensor | None = None,
        head_sink: list[Tensor] | None = None,
    ) -> Tensor:
        """x (B, T, D) target positions (only the new ones when `cache` is given); memory (B, S, D).
        `self_mask` (B, 1, 1, cached + 1): the cached positions each row's one new position may see
        (None: all of them). `head_sink`: see `CrossAttention.forward`."""
        self_kv = cache.self_kv if cache is not None else None
        memory_kv = cache.memory_kv if cache is not None else None
        attn = self.self_attn(self.res_self.inner(x), pad_mask=self_mask, causal=True, cache=self_kv)
        x = self.res_self.outer(x, attn)
        y = self.cross_attn(self.res_cross.inner(x), memory, mem_mask, memory_kv, attn_sink, head_sink)
        x = self.res_cross.outer(x, y)
        return self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))
