"""Linear layers whose bf16 weights oneDNN lays out once, for decoding on a CPU.

`F.linear` on bf16 CPU tensors hands the weight to oneDNN in its plain layout, and oneDNN copies
it into the blocked layout of its AMX / AVX-512 kernels at every call. For a decoding step that is
most of the work of a layer: the copy costs as much as the product of a few rows (a 5-row step of
the output projection, 256 x 6,000, ran 2.4x faster packed; on the de->en recipe beam 5 1.1-1.2x,
greedy 1.1-1.25x; with the feed-forward's ReLU inside its first product, another 0-10%).
`pack_linear_layers` does the copy once, at load, the way torch.compile's CPU freezing pass does.
Inference only: a packed layer has no gradient and no `weight` to train or save.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import Tensor, nn

from seq2seq.models.layers import FeedForward

log = logging.getLogger(__name__)

_ONEDNN = torch.ops.mkldnn
ROWS_HINT = 256  # oneDNN picks its blocking for this many rows; any number runs (64-256: fastest measured)


class PackedLinear(nn.Module):
    """`nn.Linear` (bf16, CPU) whose weight is held in oneDNN's blocked layout: (..., in) -> (..., out).

    `activation` "relu" applies the ReLU inside the same kernel (a oneDNN post-op).
    """

    def __init__(self, linear: nn.Linear, activation: str = "none") -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.activation = activation
        self.packed = _ONEDNN._reorder_linear_weight(linear.weight.detach(), ROWS_HINT)  # opaque
        self.bias = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: Tensor) -> Tensor:
        return _ONEDNN._linear_pointwise(x, self.packed, self.bias, self.activation, [], "")

    def extra_repr(self) -> str:
        shape = f"in_features={self.in_features}, out_features={self.out_features}"
        return f"{shape}, activation={self.activation}, packed=oneDNN"


class PackedFeedForward(nn.Module):
    """`FeedForward` for inference: down(act(up(x))); a ReLU inside the up projection's kernel, another
    activation after it."""

    def __init__(self, ffn: FeedForward) -> None:
        super().__init__()
        fused = ffn.activation == "relu"
        self.up, self.down = (
            PackedLinear(ffn.up, activation="relu" if fused else "none"),
            PackedLinear(ffn.down),
        )
        self.act: Callable[[Tensor], Tensor] = nn.Identity() if fused else ffn.act

    def forward(self, x: Tensor) -> Tensor:
        return self.down(self.act(self.up(x)))


def can_pack(device: torch.device, dtype: torch.dtype | None) -> bool:
    """Whether this torch can pack bf16 weights for this CPU (oneDNN with bf16 kernels)."""
    if device.type != "cpu" or dtype is not torch.bfloat16 or not torch.backends.mkldnn.is_available():
        return False
    needed = ("_reorder_linear_weight", "_linear_pointwise", "_is_mkldnn_bf16_supported")  # private ops
    return all(hasattr(_ONEDNN, op) for op in needed) and bool(_ONEDNN._is_mkldnn_bf16_supported())


def pack_linear_layers(model: nn.Module) -> int:
    """Replace every `nn.Linear` of `model` (bf16, on the CPU, for inference) by a `PackedLinear`, and
    every `FeedForward` by a `PackedFeedForward` (its dropout is off at inference anyway).

    Returns how many linear layers were packed. A layer tied to an embedding (the output projection
    of shared embeddings) gets its packed copy; the embedding keeps the plain one.
    """
    count = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is FeedForward:
                setattr(module, name, PackedFeedForward(child))
                count += 2
            elif type(child) is nn.Linear:
                setattr(module, name, PackedLinear(child))
                count += 1
    log.info("%d linear layers packed for oneDNN", count)
    return count
