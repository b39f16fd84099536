"""A model with fewer layers started from a bigger run's (`train.init_from` with other layer counts):
each new layer starts as the source layer chosen, everything else as the source has it, and every
choice that cannot be made is refused before anything is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import inference_weights, load_checkpoint
from seq2seq.training.shrink import spread
from tests.conftest import TrainedRun, tiny_config_dict
from tests.helpers import cli_translate, run_cli


@pytest.fixture
def deep(trained_run: Callable[[str], TrainedRun]) -> TrainedRun:
    """The shared 3+3-layer run the smaller models start from (only read)."""
    return trained_run("deep")


def shrunk_config(tmp_path: Path, source: Path, model: dict, train: dict) -> Path:
    """The deep run's model with the layer counts `model`, starting from `source`; a learning rate of
    ~0 keeps the weights after its one step those it started with."""
    frozen = {"max_steps": 1, "lr": 1e-12, "warmup_steps": 1, "schedule": "constant", "valid_every": 1}
    raw = tiny_config_dict(tmp_path, **frozen, **train)
    raw["model"] |= {"encoder_layers": 3, "decoder_layers": 3, **model}
    raw["train"]["init_from"] = str(source)
    config = tmp_path / "shrunk.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config


@pytest.mark.parametrize(
    ("model", "train", "starts"),
    [
        # the default: as many as the model has, evenly spread; one layer is the first
        ({"encoder_layers": 2, "decoder_layers": 1}, {}, {"encoder": [0, 2], "decoder": [0]}),
        # a list chooses; the other stack keeps all its layers
        ({"decoder_layers": 1}, {"init_decoder_layers": [2]}, {"encoder": [0, 1, 2], "decoder": [2]}),
        # more layers than the source, from a list in which one layer starts two
        (
            {"encoder_layers": 4},
            {"init_encoder_layers": [0, 0, 1, 2]},
            {"encoder": [0, 0, 1, 2], "decoder": [0, 1, 2]},
        ),
    ],
)
def test_each_new_layer_starts_as_the_source_layer_chosen(deep, tmp_path, model, train, starts):
    result = run_cli("train", str(shrunk_config(tmp_path, deep.run, model, train)))
    assert result.exit_code == 0, result.output
    source = inference_weights(load_checkpoint(deep.run / "checkpoints" / "best.pt"))
    started = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["model"]
    expected = {}
    for name, value in source.items():
        stack, _, rest = name.partition(".")
        if stack not in starts:  # embeddings, final norms, output layer
            expected[name] = value
            continue
        index, _, rest = rest.partition(".")
        for new, old in enumerate(starts[stack]):
            if old == int(index):
                expected[f"{stack}.{new}.{rest}"] = value
    assert started.keys() == expected.keys()
    for name, value in started.items():
        assert torch.allclose(value, expected[name], atol=1e-8), name
    # it is a run like any other: it translates
    assert len(cli_translate(tmp_path / "run", ["red cat runs", "blue bird"])) == 2


@pytest.mark.parametrize(
    ("model", "train", "says"),
    [
        ({"decoder_layers": 4}, {}, ["model.decoder_layers: 4 here, 3 in", "train.init_decoder_layers"]),
        (
            {"decoder_layers": 1},
            {"init_decoder_layers": [0, 1]},
            ["lists 2 layers; model.decoder_layers is 1"],
        ),
        ({"decoder_layers": 1}, {"init_decoder_layers": [3]}, ["has 3 (0 to 2), not 3"]),
        ({}, {"init_encoder_layers": [-1, 0, 1]}, ["train.init_encoder_layers: layer numbers count from 0"]),
        ({}, {"init_encoder_layers": "two"}, ["train.init_encoder_layers: expected a number or a list"]),
        ({"heads": 4}, {"init_decoder_layers": [0, 1, 2]}, ["model.heads: 2 in", "4 here"]),
    ],
)
def test_a_start_that_cannot_be_made_is_refused_before_anything_is_written(
    deep, tmp_path, model, train, says
):
    result = run_cli("train", str(shrunk_config(tmp_path, deep.run, model, train)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for words in says:
        assert words in result.output
    assert not (tmp_path / "run").exists()


def test_chosen_layers_need_a_run_to_start_from(tmp_path):
    raw = tiny_config_dict(tmp_path, init_decoder_layers=[0])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "train.init_decoder_layers: only with train.init_from" in result.output


@pytest.mark.parametrize("have", range(1, 13))
def test_spread_layers_are_distinct_in_order_and_span_the_source(have):
    for want in range(1, have + 1):
        layers = spread(have, want)
        assert len(layers) == want and list(layers) == sorted(set(layers))
        assert layers[0] == 0 and 0 <= layers[-1] < have
        if want > 1:
            assert layers[-1] == have - 1
    assert spread(have, have) == tuple(range(have))
