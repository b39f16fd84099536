"""Cross-attention with its head 0 computed explicitly (guided alignment) is the same layer: the same
outputs as the fused kernel, the weights it hands out are that head's, and they carry gradients."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from seq2seq.models.layers import CrossAttention, attention_weights, split_heads


def inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x (2, 5, 16), memory (2, 7, 16), and a mask hiding the second source's last three positions."""
    g = torch.Generator().manual_seed(seed)
    x, memory = torch.randn(2, 5, 16, generator=g), torch.randn(2, 7, 16, generator=g)
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[1, ..., 4:] = False
    return x, memory, mask


@pytest.mark.parametrize("heads", [1, 4])
def test_the_explicit_head_gives_the_fused_layers_output(heads):
    torch.manual_seed(0)
    layer = CrossAttention(16, heads, dropout=0.1).eval()
    x, memory, mask = inputs()
    sink: list[torch.Tensor] = []
    assert_close(layer(x, memory, mask, head_sink=sink), layer(x, memory, mask), atol=1e-6, rtol=1e-5)
    q = split_heads(layer.q(x), heads)
    k, _ = layer.memory_keys(memory)
    (weights,) = sink
    assert weights.shape == (2, 5, 7)
    assert_close(weights, attention_weights(q, k, mask)[:, 0])
    assert_close(weights.sum(-1), torch.ones(2, 5))
    assert bool((weights[1, :, 4:] == 0).all())  # padding gets none


def test_training_mode_without_dropout_is_the_same_layer_and_the_weights_carry_gradients():
    torch.manual_seed(0)
    layer = CrossAttention(16, 4, dropout=0.0).train()
    x, memory, mask = inputs(1)
    sink: list[torch.Tensor] = []
    assert_close(layer(x, memory, mask, head_sink=sink), layer(x, memory, mask), atol=1e-6, rtol=1e-5)
    sink[0][:, :, 0].sum().backward()
    assert layer.q.weight.grad is not None
    head = layer.q.weight.grad.view(4, 4, 16)  # (H, Dh, D): rows of the query projection by head
    assert head[0].abs().sum() > 0 and head[1:].abs().sum() == 0  # only head 0 made those weights


def test_dropout_drops_the_explicit_heads_weights_as_the_fused_kernel_does():
    """Dropout on the weights keeps each output's expectation: over many draws, the mean output of the
    explicit path approaches the layer without dropout, as the fused kernel's does."""
    torch.manual_seed(0)
    layer = CrossAttention(16, 2, dropout=0.5)
    x, memory, mask = inputs(2)
    clean = layer.eval()(x, memory, mask)
    layer.train()
    draws = torch.stack([layer(x, memory, mask, head_sink=[]) for _ in range(2000)])
    assert not torch.allclose(draws[0], clean)
    assert_close(draws.mean(0), clean, atol=0.03, rtol=0)
