"""The pipeline scripts' training step (scripts/train_once.py) skips a run only when it finished with
the settings asked for now, as the run records it (never as its log reads): a run finished with others
stops the script, naming what differs; an unfinished one is trained, continued when it was interrupted
after a checkpoint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.train_once import main, train_command
from seq2seq.checkpoint import atomic_save, load_checkpoint
from seq2seq.run.finished import clear_finished
from seq2seq.run.layout import RunDir
from seq2seq.training.trainer import Trainer
from tests.conftest import ROOT, TrainedRun
from tests.helpers import run_cli, stopped_before


def test_a_run_finished_with_these_settings_is_skipped(tiny_run: TrainedRun) -> None:
    assert train_command(tiny_run.config, tiny_run.run, []) is None
    assert main([str(tiny_run.config), str(tiny_run.run)]) == 0


def test_a_run_finished_with_other_settings_is_refused_naming_each(
    tiny_run: TrainedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = ["--set", "train.lr=0.5", "--set", "model.dropout=0.25"]
    assert main([str(tiny_run.config), str(tiny_run.run), *asked]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ")
    assert "train.lr" in error and "0.5 asked for" in error
    assert "model.dropout" in error and "0.25 asked for" in error


def test_the_decode_section_and_run_directory_do_not_count(tiny_run: TrainedRun, tmp_path: Path) -> None:
    copied = tmp_path / "elsewhere"  # a finished run copied into another RUNS is still that run
    shutil.copytree(tiny_run.run, copied)
    assert train_command(tiny_run.config, copied, ["decode.beam=7"]) is None


def test_an_absent_or_interrupted_run_is_trained(tiny_run: TrainedRun, tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    command = train_command(tiny_run.config, absent, ["train.lr=0.5"])
    assert command == [
        "s2s",
        "train",
        str(tiny_run.config),
        "--set",
        f"run_dir={absent}",
        "--set",
        "train.lr=0.5",
    ]
    interrupted = tmp_path / "interrupted"
    shutil.copytree(tiny_run.run, interrupted)
    clear_finished(RunDir(interrupted))  # what a training that was then stopped leaves
    assert train_command(tiny_run.config, interrupted, ["train.lr=0.5"])[-1] == "--resume"
    shutil.rmtree(interrupted / "checkpoints")  # interrupted before its first checkpoint
    assert train_command(tiny_run.config, interrupted, ["train.lr=0.5"])[-1] == "--overwrite"


@pytest.mark.slow
@pytest.mark.parametrize("killed", [False, True])
def test_a_run_resumed_after_it_finished_and_stopped_is_trained_on(
    run_copy: TrainedRun, monkeypatch: pytest.MonkeyPatch, killed: bool
) -> None:
    """The run finished at step 12 (its log says so), was resumed to 60 and stopped at step 17, by
    Ctrl-C or a kill: it has not finished, and is continued."""
    monkeypatch.setattr(Trainer, "train_step", stopped_before(17, killed))
    more = ["--set", "train.max_steps=60"]
    assert run_cli("train", str(run_copy.config), "--resume", *more).exit_code == 130
    assert "finished at step 12" in (run_copy.run / "train.log").read_text(encoding="utf-8")
    command = train_command(run_copy.config, run_copy.run, ["train.max_steps=60"])
    assert command is not None and command[-1] == "--resume"


def test_a_finished_run_whose_checkpoint_changed_since_is_trained_on(run_copy: TrainedRun) -> None:
    """A last.pt written after the run recorded that it finished (by an s2s that did not remove the
    record) is not the finished training's: the run is continued, which records it again."""
    last = run_copy.run / "checkpoints" / "last.pt"
    state = load_checkpoint(last)
    state["progress"]["train_seconds"] += 1.0
    atomic_save(state, last)
    command = train_command(run_copy.config, run_copy.run, [])
    assert command is not None and command[-1] == "--resume"


@pytest.mark.slow
def test_a_bad_override_is_an_error_not_a_traceback(tiny_run: TrainedRun) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scripts.train_once", str(tiny_run.config), str(tiny_run.run)]
        + ["--set", "train.no_such_key=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "no_such_key" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_run_to_train_becomes_s2s_train_itself(tiny_run: TrainedRun, tmp_path: Path) -> None:
    run = tmp_path / "absent"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.train_once",
            str(tiny_run.config),
            str(run),
            "--set",
            "train.no_such_key=1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2  # s2s train's refusal, and its message
    assert result.stderr.startswith("error: ") and "no_such_key" in result.stderr
    assert not run.exists()
