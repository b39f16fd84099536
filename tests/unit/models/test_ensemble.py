"""An ensemble decodes like one model whose next-token distribution is the members' average."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.ensemble import Ensemble
from seq2seq.special import BOS, PAD
from tests.conftest import make_model, random_ids
from tests.helpers import run_cli

SETTINGS = SearchSettings(beam=3, nbest=3, length_penalty=1.0, max_len_a=1.0, max_len_b=4)


def same_hypotheses(a, b) -> None:
    for x, y in zip(a, b, strict=True):
        assert [h.tokens for h in x] == [h.tokens for h in y]
        assert [h.score for h in x] == pytest.approx([h.score for h in y], abs=1e-4)


@pytest.mark.parametrize("copies", [1, 2])
def test_an_ensemble_of_one_model_is_that_model(copies):
    model = make_model(seed=21)
    src = random_ids(4, 7, seed=4)
    src[2, 4:] = PAD
    ensemble = Ensemble([model] * copies)
    same_hypotheses(beam_search(ensemble, src, SETTINGS), beam_search(model, src, SETTINGS))
    greedy = dataclasses.replace(SETTINGS, beam=1, nbest=1)
    same_hypotheses(greedy_search(ensemble, src, greedy), greedy_search(model, src, greedy))


@torch.no_grad()
def test_each_step_averages_the_members_probabilities():
    a, b = make_model(seed=22), make_model(seed=23)
    src, tgt = random_ids(2, 6, seed=1), random_ids(2, 4, seed=2)
    tgt[:, 0] = BOS
    ensemble = Ensemble([a, b])
    got = ensemble.decode(tgt, ensemble.encode(src))
    expected = torch.log(
        (a.decode(tgt, a.encode(src)).softmax(-1) + b.decode(tgt, b.encode(src)).softmax(-1)) / 2
    )
    assert torch.allclose(got, expected, atol=1e-5)
    assert torch.allclose(got.exp().sum(-1), torch.ones(2, 4), atol=1e-5) and math.isfinite(float(got.sum()))


def test_an_ensemble_decodes_the_same_cached_and_uncached_batched_and_alone():
    ensemble = Ensemble([make_model(seed=24), make_model(seed=25)])
    src = random_ids(3, 7, seed=6)
    src[0, 3:] = PAD
    fast = beam_search(ensemble, src, SETTINGS)
    same_hypotheses(fast, beam_search(ensemble, src, dataclasses.replace(SETTINGS, use_cache=False)))
    for i in range(3):
        alone = beam_search(ensemble, src[i : i + 1, : int((src[i] != PAD).sum())], SETTINGS)
        same_hypotheses(alone, fast[i : i + 1])


def test_the_command_line_takes_several_checkpoints(tiny_run, tmp_path):
    run = tiny_run.run
    src = tmp_path / "src.txt"
    src.write_text("red cat\nblue bird\n")
    both = ["--checkpoint", "step_6", "--checkpoint", "step_12"]
    result = run_cli("translate", str(run), "-i", str(src), *both)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 2
    json_file = tmp_path / "s.json"
    args = ["evaluate", str(run), "--src", str(src), "--ref", str(src), "--json", str(json_file), *both]
    assert run_cli(*args).exit_code == 0
    used = json.loads(json_file.read_text())["model"]["checkpoints"]
    assert [p["path"].rsplit("/", 1)[-1] for p in used] == ["step_6.pt", "step_12.pt"]
