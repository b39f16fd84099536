"""The pipeline scripts' training step (scripts/train_once.py) skips a run only when it finished with
the settings asked for now: a run finished with others stops the script, naming what differs; an
unfinished one is trained, continued when it was interrupted after a checkpoint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.train_once import main, train_command
from tests.conftest import ROOT, TrainedRun


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
    log = interrupted / "train.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(line for line in lines if "finished at step" not in line), encoding="utf-8")
    assert train_command(tiny_run.config, interrupted, ["train.lr=0.5"])[-1] == "--resume"
    shutil.rmtree(interrupted / "checkpoints")  # interrupted before its first checkpoint
    assert train_command(tiny_run.config, interrupted, ["train.lr=0.5"])[-1] == "--overwrite"


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
