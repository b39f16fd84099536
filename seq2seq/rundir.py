"""The run directory on disk: its layout, its owner, and whether it is consistent.

    RUN_DIR/
      config.yaml            resolved config
      tokenizer/             SentencePiece model(s)
      inputs.json            the run's format version, and sha256 of the tokenizer and the data files
                             the run was made from
      checkpoints/last.pt    latest state (resume from here)
      checkpoints/best.pt    best by train.best_metric
      checkpoints/step_N.pt  the last train.keep_checkpoints numbered states
      train.log              the training log
      metrics.jsonl          one JSON object per log interval and per validation
      tensorboard/           the same metrics as TensorBoard events (train.tensorboard: true)
      .s2s-run               marks the directory as s2s's own (only such a directory is ever replaced);
                             `s2s train` holds an OS lock on it, so a run has one trainer at a time
      .s2s-previous/         while a command's changes can still be undone: journal.json (how), the
                             previous run (`--overwrite`) or copies of the files the set-up rewrites
                             (`RunChange`)

The checkpoint files themselves are written and read by `seq2seq.checkpoint`.

Format versions (`"format"` in inputs.json, written with the checksums): 0 = none recorded (runs made
before s2s recorded one; the same layout), 1 = the layout above. Every command that reads a run reads
formats 0 and 1 and refuses a higher one (made by a newer s2s); training into a run rewrites its
inputs.json and so records format 1.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from seq2seq.config import Config, config_differences, config_to_dict, data_files, load_config
from seq2seq.errors import RunDirError
from seq2seq.files import changed_files, file_sha256, same_file, write_text
from seq2seq.locks import lock_or_refuse

CHECKPOINT_NAMES = ("best", "last")
# What a command does to a run directory. new: start a run (where none has started, or only a
# tokenizer stage ran); resume: continue the run from last.pt; overwrite: replace the run.
Mode = Literal["new", "resume", "overwrite"]
RUN_FORMAT = 1  # the run-directory format this code writes, and the newest it reads
MARKER = ".s2s-run"
PREVIOUS = ".s2s-previous"  # what a command's changes are undone from (`RunChange`)
JOURNAL = "journal.json"
REWRITTEN = ("config.yaml", "inputs.json")  # the files a set-up replaces in a run it keeps
APPENDED = ("train.log",)  # and the one it appends to

log = logging.getLogger(__name__)


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def config_file(self) -> Path:
        return self.path / "config.yaml"

    @property
    def tokenizer_dir(self) -> Path:
        return self.path / "tokenizer"

    @property
    def inputs_file(self) -> Path:
        return self.path / "inputs.json"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def marker_file(self) -> Path:
        return self.path / MARKER

    @property
    def log_file(self) -> Path:
        return self.path / "train.log"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def tensorboard_dir(self) -> Path:
        return self.path / "tensorboard"

    def checkpoint_file(self, name: str) -> Path:
        """Where checkpoint `name` (best, last, averaged, ...) is written; it need not exist yet."""
        return self.checkpoint_dir / f"{name}.pt"

    def step_checkpoint(self, step: int) -> Path:
        """The numbered checkpoint of `step`."""
        return self.checkpoint_dir / f"step_{step}.pt"

    def numbered_checkpoints(self) -> list[Path]:
        """Numbered checkpoints, oldest first."""
        found = [
            (int(m.group(1)), p)
            for p in self.checkpoint_dir.glob("step_*.pt")
            if (m := re.fullmatch(r"step_(\d+)\.pt", p.name))
        ]
        return [p for _, p in sorted(found)]

    def own_files(self) -> dict[str, Path]:
        """The files that make up the run (no command may write over them except `s2s train`)."""
        files = [self.config_file, self.inputs_file, self.marker_file, self.log_file, self.metrics_file]
        files += sorted(self.tokenizer_dir.glob("*")) if self.tokenizer_dir.is_dir() else []
        files += [self.checkpoint_dir / f"{name}.pt" for name in CHECKPOINT_NAMES]
        files += self.numbered_checkpoints()
        return {f"part of the run {self.path} ({p.name})": p for p in files if p.exists()}

    def load_config(self) -> Config:
        """The run's resolved config; errors say what is missing."""
        if not self.path.is_dir():
            raise RunDirError(f"run directory not found: {self.path}")
        if not self.config_file.is_file():
            raise RunDirError(f"{self.path} is not an s2s run directory (no config.yaml)")
        self._check_not_replaced()
        if (found := self.format_version()) > RUN_FORMAT:
            raise RunDirError(
                f"{self.path} was made by a newer s2s (run format {found}; this s2s reads formats up to "
                f"{RUN_FORMAT}): upgrade s2s to use this run"
            )
        return load_config(self.config_file, saved=True)

    def format_version(self) -> int:
        """The run's format version; 0 when none is recorded (a run made before s2s recorded one)."""
        try:
            found = json.loads(self.inputs_file.read_text(encoding="utf-8")).get("format", 0)
        except (OSError, ValueError, UnicodeDecodeError, AttributeError):
            # no or unreadable inputs.json: translating never needed it, and the commands that need its
            # checksums report a corrupt one themselves, so this reads as the oldest format
            return 0
        return found if isinstance(found, int) else 0

    def checkpoint_path(self, name: str) -> Path:
        """`best`, `last`, another name in checkpoints/, or a file path -> an existing checkpoint file."""
        named = self.checkpoint_file(name)
        path = named if name in CHECKPOINT_NAMES or named.is_file() else Path(name)
        if not path.is_file():
            have = (
                sorted(p.name for p in self.checkpoint_dir.glob("*.pt"))
                if self.checkpoint_dir.is_dir()
                else []
            )
            raise RunDirError(
                f"checkpoint not found: {path}"
                + (f" (available: {', '.join(have)})" if have else " (none saved yet)")
            )
        return path

    # ---- metrics --------------------------------------------------------------------------------------

    def append_metrics(self, record: dict[str, Any]) -> None:
        with self.metrics_file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def truncate_metrics(self, step: int) -> None:
        """Drop records past `step` (logged after the checkpoint a resumed run starts from)."""
        kept = [r for r in self.read_metrics() if r["step"] <= step]
        write_text(self.metrics_file, "".join(json.dumps(r) + "\n" for r in kept))

    def read_metrics(self) -> list[dict[str, Any]]:
        if not self.metrics_file.is_file():
            return []
        return [
            json.loads(line) for line in self.metrics_file.read_text(encoding="utf-8").splitlines() if line
        ]

    # ---- what the run was made from -------------------------------------------------------------------

    def read_inputs(self) -> dict[str, Any]:
        """The recorded checksums: {"format": N, "tokenizer": {file: sha256}, "data": {key: sha256}}."""
        if not self.inputs_file.is_file():
            return {}
        try:
            return json.loads(self.inputs_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise RunDirError(f"{self.inputs_file} is corrupt; restore it or start over") from None

    def record_inputs(self, **sections: dict[str, str]) -> None:
        """Record (replace) these sections' checksums, keeping the others, and this code's format."""
        # the version first in the file, where a reader looks; an older run's is raised to this code's
        inputs = {"format": RUN_FORMAT} | self.read_inputs() | sections | {"format": RUN_FORMAT}
        write_text(self.inputs_file, json.dumps(inputs, indent=2) + "\n")

    # ---- one trainer at a time ------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the run directory for this process (an OS lock, released on any exit, even kill -9).

        Creates the directory and its marker, and removes them again when nothing else was made there;
        refuses a non-empty directory that s2s did not make, and a directory another `s2s train` holds
        (naming its pid). The marker holds this process's pid while the lock is held and its earlier
        content after, so a refused command leaves it as it was.
        """
        if self.path.is_dir() and any(self.path.iterdir()) and not self.marker_file.is_file():
            raise RunDirError(
                f"{self.path} is not empty and is not an s2s run directory; choose another run_dir"
            )
        made_dir, made_marker = not self.path.exists(), not self.marker_file.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.marker_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise RunDirError(f"cannot train into {self.path}: {e.strerror} ({e.filename})") from None
        try:
            lock_or_refuse(fd, lambda: self._in_use(fd))
            before = os.pread(fd, 4096, 0)
            _rewrite(fd, f"{os.getpid()}\n".encode())
            try:
                yield
            finally:
                _rewrite(fd, before)
                if made_marker and [p.name for p in self.path.iterdir()] == [self.marker_file.name]:
                    self.marker_file.unlink()  # the lock guarded nothing: leave nothing
                    if made_dir:
                        self.path.rmdir()
        finally:
            os.close(fd)

    def _in_use(self, fd: int) -> RunDirError:
        """The refusal when another process holds the lock: the marker names its pid."""
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        return RunDirError(
            f"{self.path} is in use by another s2s train (pid {holder}); "
            "wait for it to finish, or stop it first"
        )

    # ---- changes that can be undone -------------------------------------------------------------------

    @property
    def previous_dir(self) -> Path:
        return self.path / PREVIOUS

    @contextlib.contextmanager
    def changing(self, mode: Mode) -> Iterator[RunChange]:
        """What the command in the block changes in the run is undone if the block fails too early.

        Call with the run locked and every check passed, before the first write. On leaving the block
        normally the changes are kept; on an error, Ctrl-C or SIGTERM they are kept only once the
        run has a checkpoint of its own (`RunChange.settle`), else undone: a new or replaced run
        goes, the previous one is back as it was.
        """
        self.previous_dir.mkdir()  # fails if it is there: `recover` first
        change = RunChange(self, mode)
        try:
            change.begin()
            yield change
        except BaseException:
            change.settle()
            raise
        change.keep()

    def recover(self) -> None:
        """Settle the changes of a command that was killed before it could (with the run locked)."""
        if not self.previous_dir.exists():
            return
        change = RunChange.interrupted(self)
        if change is None:  # killed before its journal was written, or while deleting what it kept
            shutil.rmtree(self.previous_dir)
            return
        pid = change.journal["pid"]
        if change.settle():
            log.info("an earlier s2s train (pid %s) was stopped after its run's first checkpoint", pid)
        elif change.mode == "overwrite":
            log.warning(
                "an earlier `s2s train --overwrite` (pid %s) was stopped before its new run had a "
                "checkpoint: the previous run it had set aside is back in %s",
                pid,
                self.path,
            )
        else:
            log.warning("an earlier s2s command (pid %s) stopped while setting up %s: undone", pid, self.path)

    def started(self) -> bool:
        """Whether the run has a last.pt, counting one that an interrupted `--overwrite` set aside
        (`recover` puts it back)."""
        aside = self.previous_dir / "run" / "checkpoints" / "last.pt"
        return self.checkpoint_file("last").is_file() or aside.is_file()

    def _check_not_replaced(self) -> None:
        """A reader's check: refuse a run whose previous content an `--overwrite` has set aside."""
        change = RunChange.interrupted(self)
        if change is not None and change.mode == "overwrite" and not change.has_checkpoint():
            raise RunDirError(
                f"{self.path} is being replaced: `s2s train --overwrite` (pid {change.journal['pid']}) "
                f"set the previous run aside in {self.previous_dir} and its new run has no checkpoint "
                "yet; if that command has stopped, the next `s2s train` or `s2s prepare` of this run "
                "directory puts the previous run back"
            )

    def check_writable(self) -> None:
        """Fail now, not at the first checkpoint an hour from now, if checkpoints cannot be written."""
        where = self.checkpoint_dir if self.checkpoint_dir.exists() else self.path
        try:
            with tempfile.TemporaryFile(dir=where):
                pass
        except OSError as e:
            raise RunDirError(f"cannot write checkpoints to {self.checkpoint_dir}: {e.strerror}") from None


class RunChange:
    """One command's changes to a run directory, kept or undone as a whole.

    `begin` sets the run's content aside in RUN/.s2s-previous before the command's first write:
    `overwrite` moves the previous run into `run/` there; the other modes copy the files the set-up
    rewrites into `saved/` and record every path and the log's size. The journal written there says
    how to undo it, so that a command killed on the way is settled by the next (`RunDir.recover`); an
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
        path = run.previous_dir / JOURNAL
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise RunDirError(
                f"{path} is unreadable ({e}); what an interrupted command set aside is in "
                f"{run.previous_dir}: move out what you need and delete it"
            ) from None
        return cls(run, journal["mode"], journal)

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
        self._record(paths=_paths(self.run.path), saved=saved, sizes=sizes)

    def has_checkpoint(self) -> bool:
        """Whether the run has a last.pt that was not there when the change began: its first."""
        if not self.recorded or not self.run.checkpoint_file("last").is_file():
            return False
        if self.mode == "overwrite":  # RUN/checkpoints is the old run's until it is set aside
            moved = self.journal["moved"]
            return "checkpoints" not in moved or os.path.lexists(
                self.run.previous_dir / "run" / "checkpoints"
            )
        return "checkpoints/last.pt" not in self.journal["paths"]

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
        _remove_unrecorded(self.run.path, set(self.journal["paths"]))
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


def _rewrite(fd: int, content: bytes) -> None:
    """Replace a file's content in place (the marker: a new inode would not be the locked one)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, content, 0)


def _entries(run: RunDir) -> list[Path]:
    """The run directory's entries, except its marker and what is set aside."""
    return [e for e in run.path.iterdir() if e.name not in (run.marker_file.name, PREVIOUS)]


def _paths(root: Path) -> list[str]:
    """Every path under `root` (files and folders, relative), except the marker and the aside folder."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/")[0] not in (MARKER, PREVIOUS):
            found.append(relative)
    return found


def _remove_unrecorded(root: Path, recorded: set[str], directory: Path | None = None) -> None:
    """Delete what lies under `root` but is not in `recorded` (what a command made)."""
    for entry in (directory or root).iterdir():
        relative = entry.relative_to(root).as_posix()
        if relative in (MARKER, PREVIOUS):
            continue
        if relative not in recorded:
            _remove(entry)
        elif entry.is_dir() and not entry.is_symlink():
            _remove_unrecorded(root, recorded, entry)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()


COMPATIBLE_SECTIONS = ("data", "tokenizer", "model")


def check_run_dir(run: RunDir, cfg: Config, mode: Mode, config_file: Path) -> None:
    """Check the run directory's state against the command's mode; writes nothing.

    Call with the run locked (`RunDir.locked`). A new run needs an empty (or tokenizer-only)
    directory; `overwrite` may replace (`RunDir.changing`) an existing run, unless that would delete one
    of the command's inputs; `resume` needs last.pt and the same data, tokenizer and model config.
    """
    started = run.checkpoint_dir.is_dir() and any(run.checkpoint_dir.iterdir()) or run.metrics_file.exists()
    has_content = any(p.name != run.marker_file.name for p in run.path.iterdir())
    if mode == "resume":
        if not (run.checkpoint_dir / "last.pt").is_file():
            raise RunDirError(
                f"nothing to resume in {run.path} (no checkpoints/last.pt); start without --resume"
            )
        check_compatible(run.load_config(), cfg, run)
    elif has_content:
        if mode == "overwrite":
            _check_nothing_read_inside(run, cfg, config_file)
        elif started:
            raise RunDirError(
                f"{run.path} already holds a training run; "
                "use --resume to continue it or --overwrite to start over"
            )
        elif run.config_file.is_file():  # only a tokenizer stage ran here: keep it if settings match
            check_compatible(run.load_config(), cfg, run)


def _check_nothing_read_inside(run: RunDir, cfg: Config, config_file: Path) -> None:
    """`--overwrite` deletes the old run once the new one starts: refuse when a file the command reads
    lies inside it."""
    root = run.path.resolve()
    init = {"train.init_from": Path(cfg.train.init_from)} if cfg.train.init_from else {}
    reads = {"the config file": config_file, **init} | {
        f"data.{key}": Path(path) for key, path in data_files(cfg).items()
    }
    for label, path in reads.items():
        inside = path.resolve() == root or root in path.resolve().parents
        if inside and not same_file(path, run.config_file):
            raise RunDirError(
                f"--overwrite would delete {label} {path}, which lies inside run_dir {run.path}; "
                "move it out first"
            )


def check_compatible(saved: Config, new: Config, run: RunDir) -> None:
    """The data, tokenizer and model sections of `new` equal the run's, or an error lists each change."""
    differences = config_differences(config_to_dict(saved), config_to_dict(new), COMPATIBLE_SECTIONS)
    changed = [f"{key}: {old!r} -> {value!r}" for key, old, value in differences]
    if changed:
        raise RunDirError(
            f"the config no longer matches the run in {run.path}:\n  "
            + "\n  ".join(changed)
            + "\nrestore these values, or start a new run with --overwrite"
        )


def data_checksums(cfg: Config) -> dict[str, str]:
    """sha256 of each data file, keyed as `config.data_files` keys them."""
    return {key: file_sha256(Path(path)) for key, path in data_files(cfg).items()}


def check_same_inputs(what: str, recorded: dict[str, str], now: dict[str, str], where: str) -> None:
    """Refuse when a recorded checksum differs from the file's today, listing every changed file."""
    changed = [f"{name}: changed since {where}" for name in changed_files(recorded, now)]
    if changed:
        raise RunDirError(f"the {what} no longer matches {where}:\n  " + "\n  ".join(changed))
