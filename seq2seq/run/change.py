"""A command's changes to a run directory, kept or undone as a whole, even across a kill.

`s2s train` and `s2s prepare` make their changes inside `changing`: before the first write the run's
content is set aside in RUN/.s2s-previous with a journal that says how to undo it. A command that
fails before its run has a checkpoint of its own puts the run back as it was (`--overwrite`'s previous
run included); one killed on the way is settled by the next command (`recover`); a reader is refused
a run that an `--overwrite` is still replacing (`seq2seq.run.journal.check_not_replaced`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from seq2seq.files import write_text
from seq2seq.run.journal import JOURNAL, has_first_checkpoint, read_journal
from seq2seq.run.layout import PREVIOUS, RunDir

# What a command does to a run directory. new: start a run (where none has started, or only a
# tokenizer stage ran); resume: continue the run from last.pt; overwrite: replace the run.
Mode = Literal["new", "resume", "overwrite"]
REWRITTEN = ("config.yaml", "inputs.json")  # the files a set-up replaces in a run it keeps
APPENDED = ("train.log",)  # and the one it appends to

log = logging.getLogger(__name__)


@contextlib.contextmanager
def changing(run: RunDir, mode: Mode) -> Iterator[RunChange]:
    """What the command in the block changes in the run is undone if the block fails too early.

    Call with the run locked and every check passed, before the first write. On leaving the block
    normally the changes are kept; on an error, Ctrl-C or SIGTERM they are kept only once the
    run has a checkpoint of its own (`RunChange.settle`), else undone: a new or replaced run
    goes, the previous one is back as it was.
    """
    run.previous_dir.mkdir()  # fails if it is there: `recover` first
    change = RunChange(run, mode)
    try:
        change.begin()
        yield change
    except BaseException:
        change.settle()
        raise
    change.keep()


def recover(run: RunDir) -> None:
    """Settle the changes of a command that was killed before it could (with the run locked)."""
    if not run.previous_dir.exists():
        return
    change = RunChange.interrupted(run)
    if change is None:  # killed before its journal was written, or while deleting what it kept
        shutil.rmtree(run.previous_dir)
        return
    pid = change.journal["pid"]
    if change.settle():
        log.info("an earlier s2s train (pid %s) was stopped after its run's first checkpoint", pid)
    elif change.mode == "overwrite":
        log.warning(
            "an earlier `s2s train --overwrite` (pid %s) was stopped before its new run had a "
            "checkpoint: the previous run it had set aside is back in %s",
            pid,
            run.path,
        )
    else:
        log.warning("an earlier s2s command (pid %s) stopped while setting up %s: undone", pid, run.path)


class RunChange:
    """One command's changes to a run directory, kept or undone as a whole.

    `begin` sets the run's content aside in RUN/.s2s-previous before the command's first write:
    `overwrite` moves the previous run into `run/` there; the other modes copy the files the set-up
    rewrites into `saved/` and record every path and the log's size. The journal written there says
    how to undo it, so that a command killed on the way is settled by the next (`recover`); an
    aside folder without a journal holds nothing to undo (it is written before anything moves, and
    removed first when the changes are kept).
    """

    def __init__(self, run: RunDir, mode: Mode, journal: dict[str, Any] | None = None) -> None:
        self.run, self.mode = run, mode
        self.journal = journal or {"mode": mode, "pid": os.getpid()}
        self.recorded = journal is not None  # the journal is on disk
        self.done = False

    @classmethod
    def interrupted(cls, run: RunDir) -> RunChange | None:
        """The change whose journal is in RUN/.s2s-previous, if there is one."""
        journal = read_journal(run.previous_dir)
        return None if journal is None else cls(run, journal["mode"], journal)

    def begin(self) -> None:
        aside = self.run.previous_dir
        names = sorted(e.name for e in _entries(self.run))
        if self.mode == "overwrite":
            self._record(moved=names)
            (aside / "run").mkdir()
            for name in names:
                os.replace(self.run.path / name, aside / "run" / name)
            return
        (aside / "saved").mkdir()
        saved = [name for name in REWRITTEN if (self.run.path / name).is_file()]
        for name in saved:
            shutil.copyfile(self.run.path / name, aside / "saved" / name)
        sizes = {name: (self.run.path / name).stat().st_size for name in APPENDED if name in names}
        self._record(paths=_paths(self.run), saved=saved, sizes=sizes)

    def has_checkpoint(self) -> bool:
        """Whether the run has a last.pt that was not there when the change began: its first."""
        last = self.run.checkpoint_file("last")
        return self.recorded and has_first_checkpoint(self.journal, last, self.run.previous_dir)

    def settle(self) -> bool:
        """After a failure: keep the changes if the run has a checkpoint of its own, else undo them.
        Returns whether they were kept."""
        if kept := self.has_checkpoint():
            self.keep()
        else:
            self.undo()
        return kept

    def setup_done(self) -> None:
        """The set-up path has finished. A resumed run's set-up is kept now (training changes the run in
        place from here); a new run's stays undoable until its first checkpoint."""
        if self.mode == "resume":
            self.keep()

    def keep(self) -> None:
        if not self.done:
            (self.run.previous_dir / JOURNAL).unlink(missing_ok=True)  # first: nothing to undo now
            shutil.rmtree(self.run.previous_dir, ignore_errors=True)
            self.done = True

    def undo(self) -> None:
        """Put the run back as it was; safe to repeat (a recovery may finish an undo that was killed).
        Before its journal was written nothing had moved or changed."""
        if self.recorded and not self.done and self.mode == "overwrite":
            self._put_back()
        elif self.recorded and not self.done:
            self._restore()
        self.keep()

    def _put_back(self) -> None:
        """`overwrite`: the new run's entries go, the previous run's come back."""
        moved, kept = self.journal["moved"], self.run.previous_dir / "run"
        for entry in _entries(self.run):  # the new run's, and the old run's not yet moved (they stay)
            if entry.name not in moved or os.path.lexists(kept / entry.name):
                _remove(entry)
        for name in moved:
            if os.path.lexists(kept / name):
                os.replace(kept / name, self.run.path / name)

    def _restore(self) -> None:
        """The other modes: what the command made goes, the files it rewrote or appended to are back."""
        _remove_unrecorded(self.run, set(self.journal["paths"]))
        for name in self.journal["saved"]:
            if (self.run.previous_dir / "saved" / name).is_file():
                os.replace(self.run.previous_dir / "saved" / name, self.run.path / name)
        for name, size in self.journal["sizes"].items():
            path = self.run.path / name
            if path.is_file() and path.stat().st_size > size:
                os.truncate(path, size)

    def _record(self, **entries: Any) -> None:
        self.journal |= entries
        write_text(self.run.previous_dir / JOURNAL, json.dumps(self.journal, indent=1) + "\n")
        self.recorded = True


def _entries(run: RunDir) -> list[Path]:
    """The run directory's entries, except its marker and what is set aside."""
    return [e for e in run.path.iterdir() if e.name not in _unchanged(run)]


def _unchanged(run: RunDir) -> tuple[str, str]:
    """The names a change leaves alone: the run's marker (and lock), and the aside folder itself."""
    return run.marker_file.name, PREVIOUS


def _paths(run: RunDir) -> list[str]:
    """Every path in the run (files and folders, relative), except the marker and the aside folder."""
    found = []
    for path in sorted(run.path.rglob("*")):
        relative = path.relative_to(run.path).as_posix()
        if relative.split("/")[0] not in _unchanged(run):
            found.append(relative)
    return found


def _remove_unrecorded(run: RunDir, recorded: set[str], directory: Path | None = None) -> None:
    """Delete what lies in the run but is not in `recorded` (what a command made)."""
    for entry in (directory or run.path).iterdir():
        relative = entry.relative_to(run.path).as_posix()
        if relative in _unchanged(run):
            continue
        if relative not in recorded:
            _remove(entry)
        elif entry.is_dir() and not entry.is_symlink():
            _remove_unrecorded(run, recorded, entry)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()
