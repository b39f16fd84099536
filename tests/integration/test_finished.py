"""Whether a run's training finished is what the run records (`seq2seq.run.finished`): written when a
training reaches one of its limits, removed when a training starts or resumes, and out of date once
the checkpoint or the config it names changed. The log's `finished at step` lines decide nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.checkpoint import atomic_save, load_checkpoint
from seq2seq.run.finished import read_finished
from seq2seq.run.layout import RunDir
from seq2seq.training.trainer import Trainer
from tests.conftest import tiny_config_dict
from tests.helpers import run_cli, stopped_before

pytestmark = pytest.mark.slow

# each limit that ends a training by itself, as train.* settings
ENDINGS = {
    "max_steps": {"max_steps": 3},
    "max_epochs": {"max_steps": 0, "max_epochs": 1, "max_tokens": 4096},
    "patience": {"max_steps": 50, "valid_every": 1, "patience": 1, "lr": 1e-9, "schedule": "constant"},
    "max_minutes": {"max_steps": 10_000, "max_minutes": 1e-6},
}


def write_config(tmp_path: Path, **train: object) -> Path:
    raw = tiny_config_dict(tmp_path, **{"valid_every": 1000, **train})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@pytest.mark.parametrize("by", ENDINGS)
def test_a_training_that_reaches_a_limit_records_which_and_where(tmp_path: Path, by: str) -> None:
    result = run_cli("train", str(write_config(tmp_path, **ENDINGS[by])))
    assert result.exit_code == 0, result.output
    run = RunDir(tmp_path / "run")
    finished = read_finished(run)
    assert finished is not None and finished.by == by
    last = load_checkpoint(run.checkpoint_file("last"))["progress"]
    assert (finished.step, finished.epoch) == (last["step"], last["epoch"])


@pytest.mark.parametrize(("killed", "saved"), [(False, 17), (True, 15)])
def test_a_run_resumed_after_finishing_and_stopped_is_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, killed: bool, saved: int
) -> None:
    """Finished at step 10, resumed to 60 and stopped at step 17: its last checkpoint is an unfinished
    training's (step 17's after Ctrl-C, step 15's when killed), though its log says `finished at step
    10`."""
    config = write_config(tmp_path, max_steps=10, valid_every=5)
    assert run_cli("train", str(config)).exit_code == 0
    run = RunDir(tmp_path / "run")
    assert read_finished(run) is not None
    monkeypatch.setattr(Trainer, "train_step", stopped_before(17, killed))
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=60")
    assert result.exit_code == 130, result.output
    assert load_checkpoint(run.checkpoint_file("last"))["progress"]["step"] == saved
    assert "finished at step 10" in run.log_file.read_text(encoding="utf-8")
    assert read_finished(run) is None


def test_a_record_that_no_longer_describes_the_run_says_nothing(tmp_path: Path) -> None:
    """A last.pt or config.yaml written since the record (by an s2s that does not keep it) leaves it
    out of date: the run is not taken for finished."""
    config = write_config(tmp_path, max_steps=4, valid_every=2)
    assert run_cli("train", str(config)).exit_code == 0
    run = RunDir(tmp_path / "run")
    state = load_checkpoint(run.checkpoint_file("last"))
    state["progress"]["train_seconds"] += 1.0
    atomic_save(state, run.checkpoint_file("last"))  # what another training's last.pt is to the record
    assert read_finished(run) is None
    assert run_cli("train", str(config), "--resume").exit_code == 0  # finishes (records) again
    assert read_finished(run) is not None
    run.config_file.write_text(run.config_file.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert read_finished(run) is None
