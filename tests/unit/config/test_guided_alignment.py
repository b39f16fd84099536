"""`train.guided_alignment` is checked like every section: unknown keys with the closest valid one, the
weight and the layer in range, and only for the family whose decoder has cross-attention."""

from __future__ import annotations

import pytest

from seq2seq.config import config_from_dict
from seq2seq.config.guided_alignment import GuidedAlignmentConfig
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict


def refused(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    return str(info.value)


def test_off_by_default_and_a_valid_block_is_read(tmp_path):
    assert not config_from_dict(tiny_config_dict(tmp_path)).train.guided_alignment.active
    cfg = config_from_dict(tiny_config_dict(tmp_path, guided_alignment={"weight": 0.1, "layer": 0}))
    assert cfg.train.guided_alignment == GuidedAlignmentConfig(weight=0.1, layer=0)
    assert cfg.train.guided_alignment.active


@pytest.mark.parametrize(("layer", "index"), [(-1, 2), (-3, 0), (0, 0), (2, 2)])
def test_a_layer_counts_from_0_or_back_from_the_last(layer, index):
    assert GuidedAlignmentConfig(0.1, layer).layer_index(3) == index


def test_an_unknown_key_names_the_closest_one(tmp_path):
    message = refused(tiny_config_dict(tmp_path, guided_alignment={"wieght": 0.1}))
    where = "train.guided_alignment"
    assert f"{where}.wieght: unknown key (did you mean {where}.weight?)" in message


def test_every_mistake_is_named_at_once(tmp_path):
    message = refused(tiny_config_dict(tmp_path, guided_alignment={"weight": -0.1, "layer": 1}))
    assert "train.guided_alignment.weight: must be in [0, 100]" in message
    assert "train.guided_alignment.layer: must be in [-1, 0] (model.decoder_layers is 1" in message
    assert "must be in [-2, 1]" not in message


@pytest.mark.parametrize(
    "model",
    [
        {"arch": "decoder_only", "max_positions": 72},
        {"arch": "encoder_only", "task": "classify"},
    ],
    ids=["decoder_only", "reader"],
)
def test_only_an_encoder_decoder_is_guided(tmp_path, model):
    raw = tiny_config_dict(tmp_path, guided_alignment={"weight": 0.1})
    raw["model"] |= model
    if model.get("task"):
        raw["train"] |= {"best_metric": "accuracy"}
    message = refused(raw)
    assert (
        "train.guided_alignment.weight: guided alignment trains the cross-attention of an encoder_decoder "
        f"model; model.arch {model['arch']} has none"
    ) in message
    raw["train"]["guided_alignment"] = {"weight": 0}
    config_from_dict(raw)  # off, any family
