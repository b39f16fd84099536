"""The model options MarianMT needs (`model.activation`, `model.positions`, `model.logits_bias`): each
does what it says, their defaults leave a model as it was, and the training loss reads the bias."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from seq2seq.config import ModelConfig, TrainConfig, config_from_dict
from seq2seq.errors import ConfigError
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.layers import FeedForward, sinusoidal_positions
from seq2seq.training.loss import sequence_loss, training_objective
from tests.conftest import make_model, random_ids


def test_the_default_positions_are_the_interleaved_table_of_the_paper():
    length, dim = 50, 16
    table = sinusoidal_positions(length, dim)
    for pos in (0, 7, 49):
        for i in range(dim // 2):
            angle = pos / 10000 ** (2 * i / dim)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


def test_concatenated_positions_are_the_same_columns_sines_first():
    interleaved, concatenated = (
        sinusoidal_positions(40, 12, layout) for layout in ("interleaved", "concatenated")
    )
    assert torch.equal(concatenated, torch.cat([interleaved[:, 0::2], interleaved[:, 1::2]], dim=1))


@pytest.mark.parametrize(("name", "function"), [("relu", F.relu), ("swish", F.silu), ("gelu", F.gelu)])
def test_the_feed_forward_applies_its_activation(name, function):
    torch.manual_seed(0)
    ffn = FeedForward(8, 16, 0.0, name).eval()
    x = torch.randn(2, 3, 8)
    assert_close(ffn(x), ffn.down(function(ffn.up(x))))


def test_defaults_build_the_model_they_always_built():
    """No output bias, ReLU blocks, the interleaved table: the same tensors, the same outputs."""
    model = make_model()
    assert model.output.bias is None and "output.bias" not in model.state_dict()
    assert all(layer.ffn.activation == "relu" for layer in [*model.encoder, *model.decoder])
    assert torch.equal(model.src_embed.positions, sinusoidal_positions(model.max_positions, 32))


def test_a_config_saved_before_the_options_loads_with_their_defaults():
    cfg = config_from_dict(
        {
            "run_dir": "r",
            "data": {"train_src": "a", "train_tgt": "b", "valid_src": "c", "valid_tgt": "d"},
            "train": {"max_steps": 1},
        },
        saved=True,
    )
    assert (cfg.model.activation, cfg.model.positions, cfg.model.logits_bias) == (
        "relu",
        "interleaved",
        False,
    )


def test_logits_bias_is_added_to_every_logit_and_read_by_the_training_loss():
    model = make_model(logits_bias=True)
    with torch.no_grad():
        model.output.bias.normal_()
    src, tgt = random_ids(3, 6), random_ids(3, 5, seed=1)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    logits = model(src, tgt_in)
    assert_close(logits, F.linear(model.features(src, tgt_in), model.output.weight) + model.output.bias)
    loss = training_objective(model, TrainConfig())(src, tgt_in, tgt_out)[0]
    assert_close(loss, sequence_loss(logits, tgt_out, TrainConfig().label_smoothing))
    loss.backward()
    assert model.output.bias.grad is not None and model.output.bias.grad.abs().sum() > 0


def test_logits_bias_is_refused_outside_the_encoder_decoder():
    with pytest.raises(ConfigError, match="model.logits_bias: only for model.arch: encoder_decoder"):
        config_from_dict(
            {
                "run_dir": "r",
                "data": {"train_src": "a", "train_tgt": "b", "valid_src": "c", "valid_tgt": "d"},
                "train": {"max_steps": 1},
                "model": {"arch": "decoder_only", "logits_bias": True},
            }
        )


def test_an_unknown_activation_lists_the_choices():
    with pytest.raises(ConfigError, match="relu.*swish.*gelu"):
        config_from_dict({"run_dir": "r", "model": {"activation": "tanh"}})


def test_a_post_norm_model_has_no_final_layer_norm():
    """MarianMT's order: each sublayer's sum normalized, nothing after the last layer."""
    model = Seq2SeqTransformer(ModelConfig(norm="post"), 20, 20)
    assert isinstance(model.enc_norm, torch.nn.Identity) and isinstance(model.dec_norm, torch.nn.Identity)
