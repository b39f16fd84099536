"""Where each file of a run directory lies, and the records s2s keeps there (`RunDir`).

    RUN_DIR/
      config.yaml            resolved config
      tokenizer/             SentencePiece model(s)
      inputs.json            the run's format version, and sha256 of the tokenizer and the data files
                             the run was made from
      checkpoints/last.pt    latest state (resume from here)
      checkpoints/best.pt    best by train.best_metric
      checkpoints/step_N.pt  the last train.keep_checkpoints numbered states
      checkpoints/base.pt    a LoRA run's frozen weights, written once (its checkpoints hold adapters)
      train.log              the training log
      metrics.jsonl          one JSON object per log interval and per validation
      finished.json          how the training finished, while it has (`seq2seq.run.finished`)
      tensorboard/           the same metrics as TensorBoard events (train.tensorboard: true)
      .s2s-run               marks the directory as s2s's own (only such a directory is ever replaced);
                             `s2s train` holds an OS lock on it, so a run has one trainer at a time
                             (`seq2seq.run.lock`)
      .s2s-previous/         while a command's changes can still be undone: journal.json (how), the
                             previous run (`--overwrite`) or copies of the files the set-up rewrites
                             (`seq2seq.run.change`)

The checkpoint files themselves are written and read by `seq2seq.checkpoint`; whether a command may
use a run is checked by `seq2seq.run.checks`.

Format versions (`"format"` in inputs.json, written with the checksums): 0 = none recorded (runs made
before s2s recorded one; the same layout), 1 = the layout above. Every command that reads a run reads
formats 0 and 1 and refuses a higher one (made by a newer s2s); training into a run rewrites its
inputs.json and so records format 1.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from seq2seq.config import Config, load_config
from seq2seq.errors import RunDirError
from seq2seq.files import write_text
from seq2seq.flags import Flag, declared
from seq2seq.run.journal import check_not_replaced

CHECKPOINT_NAMES = ("best", "last", "base")  # base: a LoRA run's frozen weights
RUN_FORMAT = 1  # the run-directory format this code writes, and the newest it reads
MARKER = ".s2s-run"
PREVIOUS = ".s2s-previous"  # what a command set aside, to undo its changes from (`seq2seq.run.change`)


# the run a command works with, as its command line names it (`s2s translate RUN_DIR ...`)
RUN_DIR = declared(Flag("Run directory made by `s2s train`.", argument=True))


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
    def finished_file(self) -> Path:
        return self.path / "finished.json"

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
        files.append(self.finished_file)
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
        check_not_replaced(self.path, self.previous_dir, self.checkpoint_file("last"))
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

    # ---- what a command sets aside (`seq2seq.run.change`) ----------------------------------------------

    @property
    def previous_dir(self) -> Path:
        return self.path / PREVIOUS

    def started(self) -> bool:
        """Whether the run has a last.pt, counting one that an interrupted `--overwrite` set aside
        (`seq2seq.run.change.recover` puts it back)."""
        aside = self.previous_dir / "run" / "checkpoints" / "last.pt"
        return self.checkpoint_file("last").is_file() or aside.is_file()

    def check_writable(self) -> None:
        """Fail now, not at the first checkpoint an hour from now, if checkpoints cannot be written."""
        where = self.checkpoint_dir if self.checkpoint_dir.exists() else self.path
        try:
            with tempfile.TemporaryFile(dir=where):
                pass
        except OSError as e:
            raise RunDirError(f"cannot write checkpoints to {self.checkpoint_dir}: {e.strerror}") from None
