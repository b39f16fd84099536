"""The record of how a run's training finished (`seq2seq.run.finished`): read back as written while
the run's last.pt and config.yaml are the ones it names; out of date (None) once either changed; a
damaged one an error naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seq2seq.errors import RunDirError
from seq2seq.run.finished import (
    change_lines,
    changed_data,
    clear_finished,
    read_finished,
    record_finished,
    setting_changes,
)
from seq2seq.run.layout import RunDir


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    """A run directory with a last.pt and a config.yaml (their content is not read, only summed)."""
    run = RunDir(tmp_path)
    run.checkpoint_dir.mkdir()
    run.checkpoint_file("last").write_bytes(b"weights")
    run.config_file.write_text("run_dir: run\n", encoding="utf-8")
    return run


def test_the_record_reads_back_until_a_training_starts(run: RunDir) -> None:
    assert read_finished(run) is None
    written = record_finished(run, 12, 1, "patience")
    assert read_finished(run) == written and (written.step, written.epoch, written.by) == (12, 1, "patience")
    clear_finished(run)
    assert read_finished(run) is None


@pytest.mark.parametrize("changed", ["checkpoints/last.pt", "config.yaml"])
def test_a_file_changed_since_makes_the_record_say_nothing(run: RunDir, changed: str) -> None:
    record_finished(run, 12, 1, "max_steps")
    (run.path / changed).write_bytes(b"written by a later training")
    assert read_finished(run) is None
    (run.path / changed).unlink()
    assert read_finished(run) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: "not json",
        lambda raw: json.dumps([raw]),
        lambda raw: json.dumps({**raw, "more": 1}),
        lambda raw: json.dumps({k: v for k, v in raw.items() if k != "step"}),
        lambda raw: json.dumps({**raw, "step": "12"}),
        lambda raw: json.dumps({**raw, "by": "tiredness"}),
    ],
)
def test_a_damaged_record_is_an_error_naming_it(run: RunDir, damage) -> None:
    record_finished(run, 12, 1, "max_steps")
    raw = json.loads(run.finished_file.read_text(encoding="utf-8"))
    run.finished_file.write_text(damage(raw), encoding="utf-8")
    with pytest.raises(RunDirError, match="finished.json"):
        read_finished(run)


# whether a finished run is the training asked for now (`setting_changes`, `changed_data`)


def asked(config: Path, *overrides: str):
    """The config `s2s train CONFIG --set ...` would train, paths absolute as the run saves them."""
    from seq2seq.config import load_config
    from seq2seq.training.request import resolve_paths

    return resolve_paths(load_config(config, list(overrides)))


def test_a_run_finished_as_asked_has_no_differences(tiny_run) -> None:
    run = RunDir(tiny_run.run)
    assert read_finished(run) is not None
    assert setting_changes(run, asked(tiny_run.config)) == []
    assert changed_data(run, asked(tiny_run.config)) == {}


def test_each_other_setting_is_named_but_not_the_run_directory_or_decoding(tiny_run, tmp_path: Path) -> None:
    run = RunDir(tiny_run.run)
    other = asked(
        tiny_run.config, "train.lr=0.5", "model.dropout=0.25", "decode.beam=7", f"run_dir={tmp_path}"
    )
    found = change_lines(setting_changes(run, other))
    assert len(found) == 2
    assert found[0].startswith("model.dropout: 0.1 -> 0.25") and found[1].startswith("train.lr: ")


def test_training_data_changed_since_is_named_by_its_key(tiny_run, tmp_path: Path) -> None:
    copy = tmp_path / "train.src"
    copy.write_text((tiny_run.data / "train.src").read_text(encoding="utf-8") + "one more line\n")
    changed = changed_data(RunDir(tiny_run.run), asked(tiny_run.config, f"data.train_src={copy}"))
    assert changed == {"train_src": str(copy)}
