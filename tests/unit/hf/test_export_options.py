"""Hugging Face export of a pre-norm run with the model options MarianMT brought (`model.activation`,
`model.positions`, `model.logits_bias`): Pegasus's layout holds each, and gives s2s's logits."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from seq2seq.config import DecodeConfig, ModelConfig
from seq2seq.models.build import build_model
from seq2seq.special import PAD
from tests.conftest import random_ids

transformers = pytest.importorskip("transformers", reason="transformers is an optional extra: s2s[hf]")
from seq2seq.hf.pegasus import write_model  # noqa: E402


@pytest.mark.parametrize("activation", ["swish", "gelu"])
def test_the_export_carries_the_activation_the_table_and_the_bias(tmp_path: Path, activation: str):
    cfg = ModelConfig(
        d_model=16,
        heads=2,
        ffn_dim=32,
        encoder_layers=2,
        decoder_layers=2,
        norm="pre",
        dropout=0.0,
        activation=activation,
        positions="concatenated",
        logits_bias=True,
    )
    torch.manual_seed(0)
    model = build_model(cfg, 40, 40).eval()
    with torch.no_grad():
        model.output.bias.normal_()
    write_model(model, DecodeConfig(), tmp_path)
    theirs = transformers.PegasusForConditionalGeneration.from_pretrained(tmp_path).eval()
    src, tgt = random_ids(3, 7, vocab=40), random_ids(3, 5, vocab=40, seed=1)
    with torch.no_grad():
        expected = model(src, tgt)
        got = theirs(input_ids=src, attention_mask=(src != PAD).long(), decoder_input_ids=tgt).logits
    assert_close(got, expected, atol=1e-4, rtol=1e-4)
