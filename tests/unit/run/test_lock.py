"""The run directory's lock: held, the marker names its holder and a second holder is refused;
released, the directory is as it was found."""

from __future__ import annotations

import os

import pytest

from seq2seq.errors import RunDirError
from seq2seq.run.layout import RunDir
from seq2seq.run.lock import locked


def test_a_lock_that_guarded_nothing_leaves_nothing_and_the_marker_as_it_was(tmp_path):
    fresh = RunDir(tmp_path / "new" / "run")
    with locked(fresh):
        assert fresh.marker_file.read_text() == f"{os.getpid()}\n"
    assert not fresh.path.exists()
    run = RunDir(tmp_path / "old")
    run.path.mkdir()
    run.config_file.write_text("config\n")
    run.marker_file.write_text("1234\n")
    with pytest.raises(KeyboardInterrupt), locked(run):
        raise KeyboardInterrupt
    assert run.marker_file.read_text() == "1234\n"


def test_a_held_run_is_refused_naming_its_holder(tmp_path):
    run = RunDir(tmp_path / "run")
    with locked(run):
        with pytest.raises(RunDirError, match=rf"in use by another s2s train \(pid {os.getpid()}\)"):
            with locked(run):
                pass
        assert run.marker_file.read_text() == f"{os.getpid()}\n"
