"""Low-rank adapters (LoRA) on a model's projections, and merging them back into plain weights.

    model (weights of train.init_from) -> `add_adapters` (each chosen nn.Linear becomes a
    `LoraLinear`: the same weight and bias, frozen, and A, B trained) -> `adapter_weights` (what a
    checkpoint keeps) -> `checkpoint.merge_adapters` (W + scale B A: the weights every engine reads)

An adapted projection keeps its weight's name (`...qkv.weight`) and adds `...qkv.lora_a` and
`...qkv.lora_b`, so the base weights load into an adapted model as they are, and merging is a sum per
projection. Which projections are chosen is `train.lora.targets` (`seq2seq.config.lora`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.config.lora import LoraConfig
from seq2seq.models.layers import CrossAttention, Dropout, FeedForward, SelfAttention

# the part of a layer each target names
TARGET_MODULES: dict[str, type[nn.Module]] = {
    "self_attention": SelfAttention,
    "cross_attention": CrossAttention,
    "feed_forward": FeedForward,
}
ADAPTER_KEYS = ("lora_a", "lora_b")  # the names of an adapter's two matrices in a state dict


class LoraLinear(nn.Linear):
    """y = W x + b + scale * B A dropout(x): a frozen projection with a trained low-rank update."""

    def __init__(self, base: nn.Linear, rank: int, scale: float, dropout: float) -> None:
        super().__init__(base.in_features, base.out_features, bias=base.bias is not None, device="meta")
        self.weight = base.weight  # the same tensors: nothing copied, the model's other references hold
        self.bias = base.bias
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)
        device, dtype = base.weight.device, base.weight.dtype
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=device, dtype=dtype))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=device, dtype=dtype))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear draws its weight
        self.scale = scale
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        out = F.linear(x, self.weight, self.bias)  # its backward needs x and W, not out: added to in place
        return out.add_(F.linear(F.linear(self.drop(x), self.lora_a), self.lora_b), alpha=self.scale)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank={self.lora_a.size(0)}, scale={self.scale:g}"


def add_adapters(model: nn.Module, cfg: LoraConfig) -> list[str]:
    """Freeze every weight of `model` and put an adapter beside each projection of `cfg.targets` (drawn
    from torch's random state: A as nn.Linear's weight, B zero, so the model computes what it did).
    Returns the adapted projections' names."""
    for p in model.parameters():
        p.requires_grad_(False)
    kinds = tuple(TARGET_MODULES[t] for t in cfg.targets)
    adapted = []
    for name, part in list(model.named_modules()):
        if not isinstance(part, kinds):
            continue
        for child, linear in list(part.named_children()):
            if type(linear) is nn.Linear:
                setattr(part, child, LoraLinear(linear, cfg.rank, cfg.scale, cfg.dropout))
                adapted.append(f"{name}.{child}")
    return adapted


def adapter_weights(model: nn.Module) -> dict[str, Tensor]:
    """The adapters' matrices of `model`'s state dict (what a LoRA checkpoint keeps)."""
    return {k: v for k, v in model.state_dict().items() if k.rsplit(".", 1)[-1] in ADAPTER_KEYS}


def trainable_parameters(model: nn.Module) -> int:
    """How many of `model`'s parameters training updates."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
