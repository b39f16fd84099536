"""The run directory's changes that can be undone: whatever point a command is killed at, the next
command (`recover`) puts the run back as it was, or keeps a new run that has its checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seq2seq.errors import RunDirError
from seq2seq.run import change as run_change
from seq2seq.run.change import RunChange, recover
from seq2seq.run.layout import RunDir
from tests.helpers import tree_digest


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs (the test never calls what would undo)."""


def old_run(path: Path) -> RunDir:
    for name, content in {
        "config.yaml": "old config\n",
        "inputs.json": "{}\n",
        "train.log": "old log\n",
        "metrics.jsonl": "{}\n",
        "checkpoints/last.pt": "old weights",
        "tokenizer/spm.model": "old tokenizer",
        "prepared/manifest.json": "{}",
    }.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content)
    os.link(path / "checkpoints" / "last.pt", path / "checkpoints" / "step_4.pt")
    (path / "best_link").symlink_to("checkpoints/last.pt")
    (path / ".s2s-run").write_text("1234\n")
    return RunDir(path)


def killed_after(monkeypatch: pytest.MonkeyPatch, calls: int, name: str = "replace") -> None:
    """`os.NAME` in seq2seq.run.change dies on its call number `calls` + 1."""
    real, done = getattr(os, name), []

    def dying(*args: object, **kwargs: object) -> object:
        if len(done) == calls:
            raise Killed
        done.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_change.os, name, dying)


def start(run: RunDir, mode: str) -> RunChange:
    run.previous_dir.mkdir()
    change = RunChange(run, mode)
    change.begin()
    return change


def write_new_run(run: RunDir, checkpoint: bool = False) -> None:
    (run.path / "config.yaml").write_text("new config\n")
    (run.path / "tokenizer").mkdir(exist_ok=True)
    (run.path / "tokenizer" / "spm.model").write_text("new tokenizer")
    if checkpoint:
        (run.path / "checkpoints").mkdir(exist_ok=True)
        (run.path / "checkpoints" / "last.pt").write_text("new weights")


@pytest.mark.parametrize("moves", range(8))  # the run has 7 entries besides its marker
def test_an_overwrite_killed_while_setting_the_old_run_aside_is_put_back(tmp_path, monkeypatch, moves):
    run = old_run(tmp_path)
    before = tree_digest(tmp_path)
    killed_after(monkeypatch, moves)
    with pytest.raises(Killed):
        start(run, "overwrite")
        write_new_run(run)
        raise Killed
    monkeypatch.undo()
    recover(run)
    assert tree_digest(tmp_path) == before and not run.previous_dir.exists()


@pytest.mark.parametrize("steps", range(9))
def test_an_undo_killed_on_its_way_is_finished_by_the_next_command(tmp_path, monkeypatch, steps):
    run = old_run(tmp_path)
    before = tree_digest(tmp_path)
    change = start(run, "overwrite")
    write_new_run(run)
    killed_after(monkeypatch, steps)
    try:
        change.undo()
    except Killed:
        monkeypatch.undo()
        recover(run)
    assert tree_digest(tmp_path) == before and not run.previous_dir.exists()


@pytest.mark.parametrize("mode", ["new", "resume"])
def test_a_set_up_killed_in_a_run_it_keeps_is_undone(tmp_path, mode):
    """Not replacing the run: its rewritten files come back, the log loses what was appended, and
    what the command made is gone; the checkpoints were never touched."""
    run = old_run(tmp_path)
    before = tree_digest(tmp_path)
    start(run, mode)
    (run.path / "config.yaml").write_text("new config\n")
    run.record_inputs(data={"train_src": "0" * 64})
    with run.log_file.open("a") as log:
        log.write("set-up lines\n")
    (run.path / "tokenizer" / "labels.json").write_text("{}")
    (run.path / "tensorboard").mkdir()
    recover(run)
    assert tree_digest(tmp_path) == before and not run.previous_dir.exists()


def test_a_new_run_killed_after_its_first_checkpoint_is_kept(tmp_path):
    run = old_run(tmp_path)
    start(run, "overwrite")
    write_new_run(run, checkpoint=True)
    assert RunDir(tmp_path).started()
    recover(run)
    assert (run.path / "checkpoints" / "last.pt").read_text() == "new weights"
    assert not run.previous_dir.exists() and not (run.path / "metrics.jsonl").exists()


def test_a_reader_is_told_that_the_run_is_being_replaced_until_it_has_a_checkpoint(tmp_path):
    run = old_run(tmp_path)
    start(run, "overwrite")
    write_new_run(run)
    with pytest.raises(RunDirError, match="is being replaced"):
        run.load_config()
    assert run.started()  # `s2s prepare` plans for the run that recovery puts back
