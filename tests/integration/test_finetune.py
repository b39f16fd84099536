"""Fine-tuning with `train.init_from`: the weights and tokenizer of another run, fresh everything else."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import inference_weights, load_checkpoint
from seq2seq.run.layout import RunDir
from tests.conftest import TrainedRun, tiny_config_dict, write_corpus, write_reader_corpus
from tests.helpers import run_cli


@pytest.fixture
def general(tiny_run: TrainedRun) -> Path:
    """The "general-domain" run the fine-tuning starts from (only read)."""
    return tiny_run.run


def finetune_config(tmp_path: Path, init_from: Path, **train: object) -> Path:
    """The same model on other ("in-domain") data, in a new run directory."""
    raw = tiny_config_dict(tmp_path, **{"max_steps": 2, "valid_every": 2, **train})
    src, tgt = write_corpus(tmp_path, "domain", 50, seed=9)
    raw["data"] |= {"train_src": str(src), "train_tgt": str(tgt)}
    raw["train"]["init_from"] = str(init_from)
    config = tmp_path / "finetune.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return config


@pytest.mark.parametrize("how", ["run directory", "checkpoint file"])
def test_fine_tuning_starts_from_the_source_weights_and_tokenizer(general, tmp_path, how):
    source = general if how == "run directory" else general / "checkpoints" / "best.pt"
    # a learning rate of ~0 makes the weights after one step those of the start
    config = finetune_config(tmp_path, source, max_steps=1, lr=1e-12, warmup_steps=1, schedule="constant")
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    assert (run / "tokenizer" / "spm.model").read_bytes() == (
        general / "tokenizer" / "spm.model"
    ).read_bytes()
    start = inference_weights(load_checkpoint(general / "checkpoints" / "best.pt"))
    state = load_checkpoint(run / "checkpoints" / "last.pt")
    for name, value in state["model"].items():
        assert torch.allclose(value, start[name], atol=1e-8), name
    assert state["progress"]["step"] == 1  # optimizer, schedule and data order start afresh
    assert [r["step"] for r in RunDir(run).read_metrics() if r["kind"] == "train"] == [1]


def test_a_different_model_section_is_a_clear_error(general, tmp_path):
    config = finetune_config(tmp_path, general)
    raw = yaml.safe_load(config.read_text())
    raw["model"]["ffn_dim"] = 128
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2
    assert "model.ffn_dim: 64 in" in result.output and "128 here" in result.output
    assert not (tmp_path / "run").exists() or not (tmp_path / "run" / "checkpoints").exists()


def test_init_from_must_be_a_run(tmp_path):
    config = finetune_config(tmp_path, tmp_path / "nowhere")
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "neither a run directory nor a checkpoint file" in result.output


def test_resuming_a_fine_tuned_run_continues_it(general, tmp_path):
    config = finetune_config(tmp_path, general, max_steps=2)
    assert run_cli("train", str(config)).exit_code == 0
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=4")
    assert result.exit_code == 0, result.output
    assert load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["progress"]["step"] == 4
    assert "initialized from" not in (tmp_path / "run" / "train.log").read_text().split("resumed from")[-1]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classify", "tag"])
def test_a_reader_fine_tunes_on_its_own_labels_and_refuses_new_ones(trained_run, tmp_path, task):
    """A fine-tuned reader keeps the label set of the run it starts from (its model has an output for
    those alone): targets of those labels train, a label outside it is refused, naming it."""
    source = trained_run(task)
    src, tgt = write_reader_corpus(tmp_path, task, "domain", 50, seed=9)
    args = ["--set", f"run_dir={tmp_path / 'run'}", "--set", f"train.init_from={source.run}"]
    args += ["--set", f"data.train_src={src}", "--set", f"data.train_tgt={tgt}", "--set", "train.max_steps=1"]
    result = run_cli("train", str(source.config), *args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run/tokenizer/labels.json").read_bytes() == (
        source.run / "tokenizer/labels.json"
    ).read_bytes()

    lines = tgt.read_text(encoding="utf-8").splitlines()
    lines[3] = "plant" if task == "classify" else " ".join(["B-PLANT"] * len(lines[3].split()))
    tgt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args[1] = f"run_dir={tmp_path / 'other'}"
    result = run_cli("train", str(source.config), *args)
    assert result.exit_code == 2 and "error: " in result.output
    assert "outside the run's label set" in result.output and "PLANT" in result.output.upper()
    assert not (tmp_path / "other").exists()
