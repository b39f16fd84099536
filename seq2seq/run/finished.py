"""Whether a run's training finished, and how: the record `RUN/finished.json`.

`s2s train` writes it when a training ends by itself (train.max_steps, max_epochs, patience or
max_minutes reached) and removes it when a training starts or resumes, so a training that was
stopped, crashed or is still going has none. The record names the checkpoint and the config it
finished with (their sha256): a last.pt or config.yaml written since, by a command that did not
remove it, shows the record out of date, and it then says nothing. Whatever asks whether a run
finished (`s2s pipeline`, the tables) reads this record, never the log; `setting_changes` and
`changed_data` say whether it is the training asked for now.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from seq2seq.config import Config, config_differences, config_to_dict, data_files
from seq2seq.errors import RunDirError
from seq2seq.files import file_sha256, write_text
from seq2seq.run.checks import COMPATIBLE_SECTIONS, data_checksums
from seq2seq.run.layout import RunDir

AGAIN = "delete it; `s2s train CONFIG --resume` records how the run finished again"
Ending = Literal["max_steps", "max_epochs", "patience", "max_minutes"]  # the train.* limit reached
# what a training's weights follow from: what resuming requires, and how it trains (not where the run
# lies, nor the decode section, which only sets decoding's defaults)
TRAINING_SECTIONS = (*COMPATIBLE_SECTIONS, "train")


@dataclass(frozen=True)
class Finished:
    """How a run's training finished: where, why, and the files it left (their sha256)."""

    step: int
    epoch: int
    by: Ending
    checkpoint_sha256: str  # of checkpoints/last.pt
    config_sha256: str  # of config.yaml


def record_finished(run: RunDir, step: int, epoch: int, by: Ending) -> Finished:
    """Record that the run's training finished at `step` (`by`: the limit it reached), its last.pt
    and config.yaml as they are now."""
    last = run.checkpoint_file("last")
    finished = Finished(step, epoch, by, file_sha256(last), file_sha256(run.config_file))
    write_text(run.finished_file, json.dumps(asdict(finished), indent=1) + "\n")
    return finished


def clear_finished(run: RunDir) -> None:
    """A training starts or resumes in the run: it has not finished (until it records so again)."""
    run.finished_file.unlink(missing_ok=True)


def read_finished(run: RunDir) -> Finished | None:
    """How the run's training finished, or None: no record (it never finished, or a training started
    since), or one that no longer describes the run's last.pt and config.yaml. A damaged record is a
    `RunDirError` naming it."""
    path = run.finished_file
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        finished = Finished(**raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        raise RunDirError(f"{path} is unreadable ({e}): {AGAIN}") from None
    fields = (finished.step, finished.epoch, finished.checkpoint_sha256, finished.config_sha256)
    if finished.by not in get_args(Ending) or [type(f) for f in fields] != [int, int, str, str]:
        raise RunDirError(f"{path} is not what `s2s train` writes: {AGAIN}")
    last, config = run.checkpoint_file("last"), run.config_file
    if not (last.is_file() and config.is_file()):
        return None
    now = (file_sha256(last), file_sha256(config))
    return finished if now == (finished.checkpoint_sha256, finished.config_sha256) else None


def setting_changes(run: RunDir, asked: Config) -> list[tuple[str, Any, Any]]:
    """How the training in `run` (finished or not) was configured otherwise than the one `asked` (paths
    absolute, as `s2s train` saves them): (key, RUN's value, asked value) for each setting of
    `TRAINING_SECTIONS` that differs; none: it is that training, if its data is too (`changed_data`)."""
    saved = config_to_dict(run.load_config())
    return config_differences(saved, config_to_dict(asked), TRAINING_SECTIONS)


def change_lines(changes: list[tuple[str, Any, Any]]) -> list[str]:
    """Each setting change for people: `key: RUN's -> asked`."""
    return [f"{key}: {old!r} -> {new!r}" for key, old, new in changes]


BUDGETS = ("train.max_steps", "train.max_epochs")  # where a training stops (0: no limit)


def longer_budget(changes: list[tuple[str, Any, Any]]) -> bool:
    """Whether `setting_changes` give the training more steps or epochs and nothing else (a limit
    raised or removed): `s2s train --resume` takes it on from its last checkpoint to the new one."""
    return bool(changes) and all(key in BUDGETS and (new == 0 or 0 < old < new) for key, old, new in changes)


def changed_data(run: RunDir, asked: Config) -> dict[str, str]:
    """The data files `asked` names whose content is not what the run recorded it trained on (or that
    it did not read), by their `data_files` key: {key: path}. Every one of them must exist."""
    recorded = run.read_inputs().get("data", {})
    now = data_checksums(asked)
    files = data_files(asked)
    return {key: files[key] for key in sorted(now) if recorded.get(key) != now[key]}
