"""Anything combined belongs together: averaging (`s2s average`), ensembling (several `--checkpoint`)
and fine-tuning (`train.init_from`) refuse a checkpoint trained with another tokenizer, model config,
tokenizer setting or task, or one that records none of them, even when its tensors have the shapes
of the run's: the error lists every difference of every such checkpoint (exit 2), and nothing is
written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import config_from_dict
from seq2seq.models.build import build_model
from tests.conftest import TrainedRun
from tests.helpers import run_cli, tree_digest


def foreign_state(run: Path, difference: str) -> dict[str, Any]:
    """step_6.pt of `run` as if trained elsewhere: with `difference`, and (but for "shape") tensors of
    exactly the run's shapes, so that only the records can tell."""
    state = load_checkpoint(run / "checkpoints" / "step_6.pt")
    recorded = state["config"]
    if difference == "tokenizer file":  # another tokenizer of the same size: another checksum
        state["tokenizer_sha256"] = {"spm.model": "0" * 64}
    elif difference == "model config":
        recorded["model"]["heads"] = 4  # 32 / 4 heads: the same tensors, another model
    elif difference == "task":
        recorded["model"]["task"] = "classify"
    elif difference == "tokenizer setting":
        recorded["tokenizer"]["split_digits"] = True
    elif difference == "no record":
        del state["config"], state["tokenizer_sha256"]
    elif difference == "shape":  # another model shape, recorded as such
        recorded["model"]["ffn_dim"] = 128
        cfg = config_from_dict(recorded)
        model = build_model(cfg.model, 60, 60)
        state["model"] = model.state_dict()
        state["inference"] = "model"
    else:
        raise AssertionError(difference)
    return state


EXPECTED = {
    "tokenizer file": "tokenizer/spm.model: the checkpoint was trained with another tokenizer file",
    "model config": "model.heads: checkpoint 4, run 2",
    "task": "model.task: checkpoint 'classify', run 'translate'",
    "tokenizer setting": "tokenizer.split_digits: checkpoint True, run False",
    "no record": "records no config or tokenizer checksums",
    "shape": "model.ffn_dim: checkpoint 128, run 64",
}


def combine(how: str, run_copy: TrainedRun, foreign: Path, tmp_path: Path) -> tuple[list[str], Path]:
    """The command that combines `foreign` with the run's weights, and what it would write."""
    run = run_copy.run
    if how == "average":
        return ["average", str(run)], run / "checkpoints" / "averaged.pt"
    if how == "ensemble":
        out = tmp_path / "translations.txt"
        checkpoints = ["--checkpoint", "best", "--checkpoint", str(foreign)]
        return ["translate", str(run), *checkpoints, "-o", str(out)], out
    raw = yaml.safe_load(run_copy.config.read_text())
    raw["run_dir"] = str(tmp_path / "tuned")
    raw["train"] |= {"init_from": str(foreign), "max_steps": 2}
    config = tmp_path / "tuned.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return ["train", str(config)], tmp_path / "tuned" / "checkpoints"


@pytest.mark.parametrize("difference", list(EXPECTED))
@pytest.mark.parametrize("how", ["average", "ensemble", "init_from"])
def test_a_checkpoint_that_does_not_belong_is_refused_with_its_differences(
    run_copy, tmp_path, how, difference
):
    run = run_copy.run
    foreign = run / "checkpoints" / "step_7.pt"  # a numbered checkpoint: `s2s average RUN` takes it
    torch.save(foreign_state(run, difference), foreign)
    args, written = combine(how, run_copy, foreign, tmp_path)
    before = tree_digest(run)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert f"{foreign} does not belong to this run" in result.output
    assert EXPECTED[difference] in result.output
    assert tree_digest(run) == before
    assert not written.exists()


def test_every_checkpoint_that_does_not_belong_is_listed(run_copy):
    run = run_copy.run
    for step, difference in ((7, "tokenizer file"), (8, "model config")):
        torch.save(foreign_state(run, difference), run / "checkpoints" / f"step_{step}.pt")
    result = run_cli("average", str(run))
    assert result.exit_code == 2
    assert "step_7.pt does not belong" in result.output and "step_8.pt does not belong" in result.output
    assert EXPECTED["tokenizer file"] in result.output and EXPECTED["model config"] in result.output
    assert "step_6.pt does not belong" not in result.output  # the run's own are not


def test_weights_of_another_shape_are_an_error_not_a_traceback(run_copy, tmp_path):
    """Records that match but tensors that do not (a hand-made file): averaging says which tensors."""
    run = run_copy.run
    state = load_checkpoint(run / "checkpoints" / "step_6.pt")
    weights = state[state["inference"]]
    name = next(iter(weights))
    weights[name] = torch.zeros(3, 3)
    torch.save(state, run / "checkpoints" / "step_7.pt")
    before = tree_digest(run)
    result = run_cli("average", str(run))
    assert result.exit_code == 2, result.output
    assert "cannot be averaged" in result.output and "(3, 3) in step_7.pt" in result.output
    assert tree_digest(run) == before
    ensemble = run_cli("translate", str(run), "--checkpoint", "best", "--checkpoint", "step_7", input="red\n")
    assert ensemble.exit_code == 2 and "step_7.pt does not fit the model" in ensemble.output


def test_checkpoints_that_belong_still_combine(run_copy):
    """The check refuses only what differs: the run's own checkpoints average and ensemble as before."""
    run = run_copy.run
    assert run_cli("average", str(run)).exit_code == 0
    assert torch.load(run / "checkpoints" / "averaged.pt", weights_only=True)["averaged_from"] == [
        "step_6.pt",
        "step_12.pt",
    ]
    result = run_cli("translate", str(run), "--checkpoint", "best", "--checkpoint", "averaged", input="red\n")
    assert result.exit_code == 0, result.output
