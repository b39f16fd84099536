"""A run directory is consistent or refused: a missing, corrupt or different tokenizer, a checkpoint
of another run, or edited training files on resume are errors saying what differs, and nothing is
trained or saved."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import load_checkpoint
from tests.conftest import tiny_config_dict, write_corpus
from tests.helpers import digest, run_cli, tree_digest


@pytest.fixture(scope="module")
def other_tokenizer(tmp_path_factory) -> Path:
    """A valid s2s tokenizer of the same size, trained with other settings."""
    tmp = tmp_path_factory.mktemp("other")
    raw = tiny_config_dict(tmp)
    raw["tokenizer"]["split_digits"] = True
    config = tmp / "other.yaml"
    config.write_text(yaml.safe_dump(raw))
    assert run_cli("train", str(config), "--tokenizer-only").exit_code == 0
    return Path(raw["run_dir"]) / "tokenizer" / "spm.model"


def damage_tokenizer(run: Path, how: str, replacement: Path) -> None:
    model = run / "tokenizer" / "spm.model"
    if how == "deleted":
        shutil.rmtree(run / "tokenizer")
    elif how == "corrupted":
        model.write_bytes(b"\x00garbage" * 100)
    else:
        assert digest(replacement) != digest(model)
        shutil.copy(replacement, model)


@pytest.mark.parametrize("how", ["deleted", "corrupted", "replaced"])
@pytest.mark.parametrize("command", ["translate", "evaluate", "resume"])
def test_a_damaged_tokenizer_is_refused_never_retrained(run_copy, other_tokenizer, tmp_path, how, command):
    config, run = run_copy.config, run_copy.run
    damage_tokenizer(run, how, other_tokenizer)
    src, ref = write_corpus(tmp_path, "t", 3, seed=3)
    args = {
        "translate": ["translate", str(run), "-i", str(src)],
        "evaluate": [
            "evaluate",
            str(run),
            "--src",
            str(src),
            "--ref",
            str(ref),
            "--out",
            str(tmp_path / "h"),
        ],
        "resume": ["train", str(config), "--resume", "--set", "train.max_steps=14"],
    }[command]
    before = tree_digest(run)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "spm.model" in result.output or "tokenizer" in result.output
    assert tree_digest(run) == before  # nothing trained, nothing saved


def test_a_checkpoint_of_another_run_is_refused_with_the_differences(run_copy, tmp_path):
    run = run_copy.run
    state = load_checkpoint(run / "checkpoints" / "last.pt")
    state["config"]["model"]["heads"] = 4  # same tensor shapes, another model
    state["tokenizer_sha256"] = {"spm.model": "0" * 64}
    foreign = tmp_path / "foreign.pt"
    torch.save(state, foreign)
    result = run_cli("translate", str(run), "--checkpoint", str(foreign), input="red cat\n")
    assert result.exit_code == 2
    assert "model.heads: checkpoint 4, run 2" in result.output
    assert "tokenizer/spm.model" in result.output


def test_resume_refuses_an_edited_corpus(run_copy):
    config = run_copy.config
    raw = yaml.safe_load(config.read_text())
    train_src = Path(raw["data"]["train_src"])
    original = train_src.read_bytes()
    try:
        train_src.write_bytes(original.replace(b"red", b"pink"))
        result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=14")
        assert result.exit_code == 2 and "train_src: changed" in result.output
    finally:
        train_src.write_bytes(original)
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=14")
    assert result.exit_code == 0, result.output
