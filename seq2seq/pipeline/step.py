"""One step of a pipeline, and whether it is done: skipped, run, continued or refused.

A step is its commands, what they read and what they write, and its kind, which decides from the
records on disk what the step's state is (`Status`):

- `Training` (an `s2s train`): done when its run directory records that it finished
  (`seq2seq.run.finished`) with the settings asked now and the same data; continued (`--resume`)
  when it stopped after a checkpoint; refused, naming each difference, when the run in its directory
  was trained otherwise.
- `Outputs` (anything else): done when its record (`seq2seq.pipeline.records`) holds the same
  commands and the same checksums of what it read, and its results are there as it made them;
  refused, naming each difference, when not; run (again) when it has no record or its results are
  gone. A command that was interrupted continues by itself (`s2s translate -i -o`).

`--redo` runs a step again, replacing what it made (`Start.AGAIN`). A step whose commands wait for
a choice not made yet (`pending`) or that reads what an earlier step has not made yet is decided
once that step has run (`Action.WAIT`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol

from seq2seq.config import Config
from seq2seq.pipeline.command import Command, Start, differences
from seq2seq.pipeline.records import Record, checksums, read_differences, write_differences
from seq2seq.run.finished import read_finished, settings_differences
from seq2seq.run.layout import MARKER, RunDir


class Action(Enum):
    SKIP = "skip"  # done as asked
    RUN = "run"
    WAIT = "wait"  # decided once the steps before it have run
    REFUSE = "refuse"  # done (or started) otherwise: --redo it


@dataclass(frozen=True)
class Status:
    action: Action
    why: str  # for people: "finished as asked", "no record yet", ...
    start: Start = Start.NEW
    differences: tuple[str, ...] = ()


class Kind(Protocol):
    """How a step's state is read from disk."""

    def status(self, step: Step, record: Record | None) -> Status: ...


@dataclass(frozen=True)
class Step:
    """One step: its commands, and the files they read and write."""

    name: str
    what: str  # one line for people
    commands: tuple[Command, ...]
    reads: tuple[Path, ...]  # files and folders its results follow from
    writes: tuple[Path, ...]  # its results
    kind: Kind
    folder: Path  # where it writes (a training's run directory); its disk is counted here
    pending: str = ""  # the step whose choice its commands wait for ("": none)
    cleared: tuple[Path, ...] = field(default=())  # results its commands refuse to replace: removed first

    def decide(self, record: Record | None, redo: bool) -> Status:
        """Its state now; `redo`: it is to run again whatever it holds."""
        if self.pending:
            return Status(Action.WAIT, f"waits for {self.pending}'s choice")
        if missing := [p for p in self.reads if not p.exists()]:
            return Status(Action.WAIT, f"waits for {missing[0]}")
        if redo:
            return Status(Action.RUN, "--redo", Start.AGAIN)
        return self.kind.status(self, record)


@dataclass(frozen=True)
class Outputs:
    """A step judged by its own record."""

    def status(self, step: Step, record: Record | None) -> Status:
        if record is None:
            started = any(p.exists() for p in step.writes)
            return Status(Action.RUN, "interrupted: continues" if started else "not run yet")
        found = [
            f"command {i + 1} ({command.verb.value}): {difference}"
            for i, (before, command) in enumerate(zip(record.commands, step.commands, strict=False))
            for difference in differences(before, command.settings)
        ]
        if len(record.commands) != len(step.commands):
            found.append(f"{len(record.commands)} command(s) then, {len(step.commands)} now")
        found += read_differences(record, checksums(step.reads))
        found += write_differences(record, checksums(step.writes))
        if found:
            return Status(Action.REFUSE, "made with other settings or inputs", differences=tuple(found))
        if any(not p.exists() for p in step.writes):
            return Status(Action.RUN, "its results are gone: made again")
        return Status(Action.SKIP, "done as asked")


@dataclass(frozen=True)
class Training:
    """A step that trains `asked` (its run config, paths absolute) into its own run directory."""

    asked: Config

    def status(self, step: Step, record: Record | None) -> Status:
        run = RunDir(self.asked.run_dir)
        if run.config_file.is_file():
            found = settings_differences(run, self.asked)
            if found:
                return Status(Action.REFUSE, "its run was trained otherwise", differences=tuple(found))
            if read_finished(run) is not None:
                return Status(Action.SKIP, "finished as asked")
            if run.checkpoint_file("last").is_file():
                return Status(Action.RUN, "interrupted: continues (--resume)", Start.CONTINUE)
        if (run.path / MARKER).is_file():  # s2s's, with no checkpoint: a start that never got far
            return Status(Action.RUN, "interrupted before its first checkpoint: starts over", Start.AGAIN)
        return Status(Action.RUN, "not run yet")
