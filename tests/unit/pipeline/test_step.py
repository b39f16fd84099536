"""Whether a step is done (`seq2seq.pipeline.step`): skipped when its record (a training: its run
directory) matches what it is asked and what it read; refused, naming each difference, when its
settings, the data it read from outside the workspace or its results changed; made again when only
what an earlier step made changed, or its results are gone; waiting while what it reads is not made
yet. A training stopped after a checkpoint continues (`--resume`), one stopped before starts over."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from seq2seq.config import load_config
from seq2seq.pipeline.command import Command, Start, Verb
from seq2seq.pipeline.records import checksums, new_record, read_record, write_record
from seq2seq.pipeline.step import Action, Outputs, Step, Training
from seq2seq.run.finished import clear_finished
from seq2seq.run.layout import RunDir
from seq2seq.training.request import resolve_paths


@pytest.fixture
def done(tmp_path: Path) -> tuple[Step, Path]:
    """A step that read a data file and an earlier step's result and wrote one file, with its record."""
    ws = tmp_path / "ws"
    (ws / "earlier").mkdir(parents=True)
    (ws / "step").mkdir()
    data, made, out = tmp_path / "data.txt", ws / "earlier" / "made.txt", ws / "step" / "out.txt"
    for path in (data, made, out):
        path.write_text(path.name, encoding="utf-8")
    command = Command(Verb.FILTER, ("--src", str(data), "--lines", "5"))
    step = Step("step", "a step", (command,), (data, made), (out,), Outputs(), ws / "step")
    write_record(
        ws, new_record("step", [command.settings], checksums(step.reads), checksums(step.writes), 1.0, 5)
    )
    return step, ws


def decide(step: Step, ws: Path, redo: bool = False):
    return step.decide(read_record(ws, step.name), redo, ws)


def test_a_step_done_as_asked_is_skipped_and_one_without_a_record_runs(done) -> None:
    step, ws = done
    assert decide(step, ws).action is Action.SKIP
    (ws / "records" / "step.json").unlink()
    assert decide(step, ws).action is Action.RUN


def test_other_settings_other_data_or_an_edited_result_are_refused_naming_each(done) -> None:
    step, ws = done
    changed = Step(
        step.name, step.what, (Command(Verb.FILTER, ("--src", str(step.reads[0]), "--lines", "6")),),
        step.reads, step.writes, step.kind, step.folder,
    )  # fmt: skip
    status = decide(changed, ws)
    assert status.action is Action.REFUSE and status.differences == ("command 1 (filter): --lines: 5 -> 6",)
    step.reads[0].write_text("other data", encoding="utf-8")  # outside the workspace: the user's
    step.writes[0].write_text("edited", encoding="utf-8")
    status = decide(step, ws)
    assert status.action is Action.REFUSE
    assert [d.split(": ", 1)[1] for d in status.differences] == [
        "changed since the step ran",
        "changed since the step made it",
    ]
    assert decide(step, ws, redo=True).start is Start.AGAIN


def test_what_an_earlier_step_made_again_makes_it_again(done) -> None:
    step, ws = done
    step.reads[1].write_text("made again", encoding="utf-8")
    status = decide(step, ws)
    assert (status.action, status.start) == (
        Action.RUN,
        Start.AGAIN,
    ) and "made.txt was made again" in status.why


def test_a_result_that_is_gone_is_made_and_a_missing_input_waits(done) -> None:
    step, ws = done
    step.writes[0].unlink()
    assert decide(step, ws).action is Action.RUN
    step.reads[1].unlink()
    assert decide(step, ws).action is Action.WAIT


# a training step, judged by its run directory (a private copy of the tiny run)


def training(run_copy, *overrides: str) -> Step:
    asked = resolve_paths(load_config(run_copy.config, list(overrides)))
    train = Command(Verb.TRAIN, (str(run_copy.config),), resume=("--resume",), again=("--overwrite",))
    return Step("teacher", "a training", (train,), (), (run_copy.run,), Training(asked), run_copy.run)


def test_a_training_is_skipped_continued_or_started_over_as_its_run_stands(run_copy) -> None:
    step, workspace = training(run_copy), run_copy.run.parent
    assert step.decide(None, False, workspace).action is Action.SKIP
    clear_finished(RunDir(run_copy.run))  # stopped after a checkpoint, as Ctrl-C leaves it
    status = step.decide(None, False, workspace)
    assert (status.action, status.start) == (Action.RUN, Start.CONTINUE)
    assert step.commands[0].starting(status.start).shown().endswith(" --resume")
    shutil.rmtree(run_copy.run / "checkpoints")  # stopped before its first checkpoint
    status = step.decide(None, False, workspace)
    assert (status.action, status.start) == (Action.RUN, Start.AGAIN)
    assert step.commands[0].starting(status.start).shown().endswith(" --overwrite")


def test_a_training_done_otherwise_is_refused_and_one_whose_made_data_changed_is_made_again(
    run_copy, tmp_path: Path
) -> None:
    status = training(run_copy, "train.lr=0.5").decide(None, False, run_copy.run.parent)
    assert status.action is Action.REFUSE and status.differences[0].startswith("train.lr: 0.003 -> 0.5")
    made = tmp_path / "earlier" / "train.src"  # what an earlier step of the workspace made anew
    made.parent.mkdir()
    made.write_text((run_copy.data / "train.src").read_text(encoding="utf-8"), encoding="utf-8")
    step = training(run_copy, f"data.train_src={made}")
    assert step.decide(None, False, tmp_path).action is Action.REFUSE  # the run read another path
    raw = yaml.safe_load((run_copy.run / "config.yaml").read_text(encoding="utf-8"))
    raw["data"]["train_src"] = str(made)
    (run_copy.run / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    made.write_text("another line\n" + made.read_text(encoding="utf-8"), encoding="utf-8")
    status = step.decide(None, False, tmp_path)
    assert (status.action, status.start) == (
        Action.RUN,
        Start.AGAIN,
    ) and "train.src was made again" in status.why
    status = step.decide(None, False, run_copy.run)  # the same file outside the workspace: the user's data
    assert status.action is Action.REFUSE and "changed since the run trained on it" in status.differences[0]


def test_a_finished_training_given_more_steps_continues_and_fewer_is_refused(run_copy) -> None:
    steps = load_config(run_copy.config).train.max_steps
    workspace = run_copy.run.parent
    step = training(run_copy, f"train.max_steps={steps * 2}")
    status = step.decide(None, False, workspace)
    assert (status.action, status.start) == (Action.RUN, Start.CONTINUE)
    assert step.commands[0].starting(status.start).shown().endswith(" --resume")
    for other in (
        (f"train.max_steps={steps - 1}",),
        (f"train.max_steps={steps * 2}", "train.lr=0.5"),
    ):
        assert training(run_copy, *other).decide(None, False, workspace).action is Action.REFUSE, other
