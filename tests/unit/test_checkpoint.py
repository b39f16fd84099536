"""Checkpoints: where `s2s average` may write, and what makes a checkpoint belong to a run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from seq2seq.checkpoint import origin_differences
from seq2seq.config import config_to_dict
from seq2seq.errors import RunDirError
from seq2seq.run.average_choice import average_output
from seq2seq.run.averaging import check_same_tensors
from seq2seq.run.layout import RunDir


@pytest.mark.parametrize("name", ["best", "last", "step_0", "step_99", "step_12"])
def test_a_training_checkpoint_name_is_refused_however_it_is_spelled(tmp_path, name):
    """One rule for `--output step_99`, `--output RUN/checkpoints/step_99(.pt)`, a `..` path, another
    directory, and a link whose target has that name."""
    run = RunDir(tmp_path / "run")
    run.checkpoint_dir.mkdir(parents=True)
    link = tmp_path / "alias.pt"
    link.symlink_to(run.checkpoint_file(name))
    spellings = [
        name,
        f"{name}.pt",
        str(run.checkpoint_dir / name),
        str(run.checkpoint_dir / f"{name}.pt"),
        str(run.checkpoint_dir / ".." / "checkpoints" / name),
        str(tmp_path / name),
        str(link),
        os.path.relpath(run.checkpoint_dir / name),
    ]
    for output in spellings:
        with pytest.raises(RunDirError, match="would replace a training checkpoint"):
            average_output(run, output)


def test_any_other_name_is_a_file_in_checkpoints_or_the_path_given(tmp_path):
    run = RunDir(tmp_path / "run")
    assert average_output(run, "averaged") == run.checkpoint_file("averaged")
    assert average_output(run, "step_9x.pt") == run.checkpoint_file("step_9x")
    assert average_output(run, str(tmp_path / "mean")) == tmp_path / "mean.pt"
    for empty in ("", ".pt", f"{tmp_path}/"):
        with pytest.raises(RunDirError, match="give a name"):
            average_output(run, empty)


def test_a_tokenizer_file_on_one_side_only_is_a_difference(tiny_config):
    state = {"config": config_to_dict(tiny_config), "tokenizer_sha256": {"spm.model": "a"}}
    assert origin_differences(state, tiny_config, {"spm.model": "a"}) == []
    with_labels = {"spm.model": "a", "labels.json": "b"}
    assert origin_differences(state, tiny_config, with_labels) == [
        "tokenizer/labels.json: the run has it, the checkpoint was trained without it"
    ]
    state["tokenizer_sha256"] = with_labels
    assert origin_differences(state, tiny_config, {"spm.model": "a"}) == [
        "tokenizer/labels.json: the checkpoint was trained with it, the run has none"
    ]


def test_tensors_to_average_must_have_one_set_of_names_and_shapes():
    a = {"w": torch.zeros(2, 3), "b": torch.zeros(3)}
    check_same_tensors([(Path("a.pt"), a), (Path("b.pt"), {k: v.clone() for k, v in a.items()})])
    with pytest.raises(RunDirError, match=r"w: \(2, 3\) in a.pt, \(3, 2\) in c.pt"):
        check_same_tensors([(Path("a.pt"), a), (Path("c.pt"), {"w": torch.zeros(3, 2), "b": a["b"]})])
    with pytest.raises(RunDirError, match=r"b: \(3,\) in a.pt, missing in d.pt"):
        check_same_tensors([(Path("a.pt"), a), (Path("d.pt"), {"w": a["w"]})])


def test_names_that_share_a_tensor_share_its_average():
    """Tied embeddings stay one tensor: the model's parameter count and file size do not grow."""
    from seq2seq.run.averaging import average_state_dicts

    states = []
    for value in (1.0, 3.0):
        embedding = torch.full((4, 2), value)
        states.append({"embed": embedding, "output": embedding, "bias": torch.full((2,), value)})
    averaged = average_state_dicts(states)
    assert averaged["embed"] is averaged["output"]
    assert torch.equal(averaged["embed"], torch.full((4, 2), 2.0))
    assert torch.equal(averaged["bias"], torch.full((2,), 2.0))
    assert averaged["bias"] is not averaged["embed"]
