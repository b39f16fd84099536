"""The pipeline scripts skip a training only when its run finished with the settings asked for now
(scripts/finished_run.py): a run finished with others stops the script, naming what differs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.finished_run import main
from tests.conftest import ROOT, TrainedRun


def test_a_run_finished_with_these_settings_is_skipped(tiny_run: TrainedRun) -> None:
    assert main([str(tiny_run.run), str(tiny_run.config), "--set", f"run_dir={tiny_run.run}"]) == 0


def test_a_run_finished_with_other_settings_is_refused_naming_each(
    tiny_run: TrainedRun, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = ["--set", "train.lr=0.5", "--set", "model.dropout=0.25"]
    assert main([str(tiny_run.run), str(tiny_run.config), *asked]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ")
    assert "train.lr" in error and "0.5 asked for" in error
    assert "model.dropout" in error and "0.25 asked for" in error


def test_the_decode_section_and_run_directory_do_not_count(tiny_run: TrainedRun, tmp_path: Path) -> None:
    asked = ["--set", "decode.beam=7", "--set", f"run_dir={tmp_path / 'elsewhere'}"]
    assert main([str(tiny_run.run), str(tiny_run.config), *asked]) == 0


def test_an_absent_or_interrupted_run_is_to_be_trained(tiny_run: TrainedRun, tmp_path: Path) -> None:
    assert main([str(tmp_path / "absent"), str(tiny_run.config)]) == 1
    interrupted = tmp_path / "interrupted"
    shutil.copytree(tiny_run.run, interrupted)
    log = interrupted / "train.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(line for line in lines if "finished at step" not in line), encoding="utf-8")
    assert main([str(interrupted), str(tiny_run.config), "--set", "train.lr=0.5"]) == 1


def test_a_bad_override_is_an_error_not_a_traceback(tiny_run: TrainedRun) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scripts.finished_run", str(tiny_run.run), str(tiny_run.config)]
        + ["--set", "train.no_such_key=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "no_such_key" in result.stderr
    assert "Traceback" not in result.stderr
