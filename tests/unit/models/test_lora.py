"""Adapters (`seq2seq.models.lora`): a new one changes nothing, training moves only it, and merging
gives the plain model the adapted one computes."""

from __future__ import annotations

import pytest
import torch

from seq2seq.checkpoint import merge_adapters
from seq2seq.config import ModelConfig
from seq2seq.config.lora import LoraConfig
from seq2seq.models.build import build_model
from seq2seq.models.lora import (
    LoraLinear,
    adapter_weights,
    add_adapters,
    trainable_parameters,
)

CFG = ModelConfig(d_model=32, heads=2, ffn_dim=64, encoder_layers=2, decoder_layers=2, dropout=0.0)


def model_and_batch(arch: str = "encoder_decoder"):
    torch.manual_seed(0)
    cfg = ModelConfig(**{**CFG.__dict__, "arch": arch})
    model = build_model(cfg, 50, 50, None).eval()
    src = torch.randint(4, 50, (3, 7))
    tgt = torch.randint(4, 50, (3, 5))
    return model, src, tgt


def logits(model, src, tgt, arch="encoder_decoder"):
    return model(src, tgt)


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_a_new_adapter_changes_nothing_and_training_moves_only_adapters(arch):
    model, src, tgt = model_and_batch(arch)
    before = logits(model, src, tgt, arch)
    frozen = {k: v.clone() for k, v in model.state_dict().items()}
    adapted = add_adapters(model, LoraConfig(rank=4, alpha=8))
    assert adapted and all(isinstance(model.get_submodule(n), LoraLinear) for n in adapted)
    assert torch.equal(logits(model, src, tgt, arch), before)
    assert trainable_parameters(model) == sum(p.numel() for p in adapter_weights(model).values())
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for _ in range(2):  # B starts at zero: the second step moves A too
        optimizer.zero_grad()
        logits(model.train(), src, tgt, arch).logsumexp(-1).sum().backward()
        optimizer.step()
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in frozen.items())
    assert all(v.abs().sum() > 0 for v in adapter_weights(model).values())


def test_merged_weights_compute_what_the_adapted_model_computes():
    model, src, tgt = model_and_batch()
    base = {k: v.clone() for k, v in model.state_dict().items()}
    add_adapters(model, LoraConfig(rank=3, alpha=6, targets=("cross_attention", "feed_forward")))
    with torch.no_grad():
        for name, value in adapter_weights(model).items():
            model.get_parameter(name).copy_(torch.randn_like(value) * 0.1)
    adapted = logits(model.eval(), src, tgt)
    plain, _, _ = model_and_batch()
    plain.load_state_dict(merge_adapters(base, adapter_weights(model), 2.0))
    torch.testing.assert_close(logits(plain, src, tgt), adapted, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(logits(plain, src, tgt), logits(model_and_batch()[0], src, tgt))


def test_only_the_targets_get_adapters():
    model, _, _ = model_and_batch()
    adapted = add_adapters(model, LoraConfig(rank=2, targets=("self_attention",)))
    assert adapted == [
        "encoder.0.attn.qkv", "encoder.0.attn.out", "encoder.1.attn.qkv", "encoder.1.attn.out",
        "decoder.0.self_attn.qkv", "decoder.0.self_attn.out",
        "decoder.1.self_attn.qkv", "decoder.1.self_attn.out",
    ]  # fmt: skip
