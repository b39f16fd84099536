"""One step of a pipeline, and whether it is done: skipped, run, continued, made again or refused.

A step is its commands, what they read and what they write, and its kind, which reads from disk
what the step's state is (`Status`):

- `Training` (an `s2s train`): done when its run directory records that it finished
  (`seq2seq.run.finished`) with the settings asked now and the data it trained on still the same;
  continued (`--resume`) when it stopped after a checkpoint, or when the settings asked now differ
  only by more steps or epochs.
- `Outputs` (anything else): done when its record (`seq2seq.pipeline.records`) holds the same
  commands and the same checksums of what it read, and its results are there as it made them; run
  when it has no record (a command that was interrupted continues by itself: `s2s translate -i -o`)
  or its results are gone.

When what an earlier step made has changed (that step was made again), a step is made again too
(`Start.AGAIN`), as with `--redo`, its commands holding that step's new choices. Otherwise it is
refused, naming each difference, when it was done with other settings (its commands, its run config),
when a file it read from outside the workspace changed (the pipeline's own data), or when a result of
it was changed since. A step whose commands
wait for a choice not made yet, or that reads what an earlier step has not made yet, is decided once
that step has run (`Action.WAIT`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol

from seq2seq.config import Config
from seq2seq.files import lies_in
from seq2seq.pipeline.command import Command, Start, differences
from seq2seq.pipeline.records import Record, changed_reads, changed_writes, checksums
from seq2seq.run.finished import change_lines, changed_data, longer_budget, read_finished, setting_changes
from seq2seq.run.layout import MARKER, RunDir


class Action(Enum):
    SKIP = "skip"  # done as asked
    RUN = "run"
    WAIT = "wait"  # decided once the steps before it have run
    REFUSE = "refuse"  # done otherwise: --redo it


@dataclass(frozen=True)
class Status:
    action: Action
    why: str  # for people: "finished as asked", "not run yet", ...
    start: Start = Start.NEW
    differences: tuple[str, ...] = ()
    missing: Path | None = None  # what it waits for: a file it reads that is not there yet


def refused(differences: list[str]) -> Status:
    return Status(Action.REFUSE, "done otherwise than asked now", differences=tuple(differences))


def made_again(paths: list[str]) -> Status:
    return Status(
        Action.RUN,
        f"{paths[0]} was made again" + (f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""),
        Start.AGAIN,
    )


class Kind(Protocol):
    """How a step's state is read from disk (`workspace`: what lies in it, earlier steps made)."""

    def status(self, step: Step, record: Record | None, workspace: Path) -> Status: ...


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

    def decide(self, record: Record | None, redo: bool, workspace: Path) -> Status:
        """Its state now; `redo`: it is to be made again, whatever it holds."""
        if self.pending:
            return Status(Action.WAIT, f"waits for {self.pending}'s choice")
        if missing := [p for p in self.reads if not p.exists()]:
            return Status(Action.WAIT, f"waits for {missing[0]}", missing=missing[0])
        if redo:
            there = any(p.exists() for p in self.writes)
            return Status(Action.RUN, "--redo", Start.AGAIN if there else Start.NEW)
        return self.kind.status(self, record, workspace)


def _split(paths: dict[str, str], workspace: Path) -> tuple[list[str], list[str]]:
    """The changes (path -> message) made in the workspace, and those of files outside it."""
    inside = [p for p in paths if lies_in(Path(p), workspace)]
    return inside, [message for p, message in paths.items() if p not in inside]


@dataclass(frozen=True)
class Outputs:
    """A step judged by its own record."""

    def status(self, step: Step, record: Record | None, workspace: Path) -> Status:
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
        remade, changed = _split(changed_reads(record, checksums(step.reads)), workspace)
        if remade:  # what an earlier step made is new: so are the choices in its commands
            return made_again(remade)
        if found := found + changed + changed_writes(record, checksums(step.writes)):
            return refused(found)
        if any(not p.exists() for p in step.writes):
            return Status(Action.RUN, "its results are gone: made again")
        return Status(Action.SKIP, "done as asked")


@dataclass(frozen=True)
class Training:
    """A step that trains `asked` (its run config, paths absolute) into its own run directory."""

    asked: Config

    def status(self, step: Step, record: Record | None, workspace: Path) -> Status:
        run = RunDir(self.asked.run_dir)
        if run.config_file.is_file():
            data = {
                path: f"{path}: changed since the run trained on it"
                for path in changed_data(run, self.asked).values()
            }
            remade, changed = _split(data, workspace)
            if record is not None:  # what else it started from: a teacher's tokenizer, its checkpoint
                remade += [
                    p for p in changed_reads(record, checksums(step.reads)) if lies_in(Path(p), workspace)
                ]
            if remade:  # what an earlier step made is new: so are the choices in its config
                return made_again(remade)
            changes = setting_changes(run, self.asked)
            if not changed and longer_budget(changes) and run.checkpoint_file("last").is_file():
                return Status(Action.RUN, "given a longer budget: continues (--resume)", Start.CONTINUE)
            if found := change_lines(changes) + changed:
                return refused(found)
            if read_finished(run) is not None:
                return Status(Action.SKIP, "finished as asked")
            if run.checkpoint_file("last").is_file():
                return Status(Action.RUN, "interrupted: continues (--resume)", Start.CONTINUE)
        if (run.path / MARKER).is_file():  # s2s's, with no checkpoint: a start that never got far
            return Status(Action.RUN, "interrupted before its first checkpoint: starts over", Start.AGAIN)
        return Status(Action.RUN, "not run yet")
