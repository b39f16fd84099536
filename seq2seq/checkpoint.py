"""The run directory on disk: the only module that knows its layout.

    RUN_DIR/
      config.yaml            resolved config
      tokenizer/             SentencePiece model(s)
      checkpoints/last.pt    latest state (resume from here)
      checkpoints/best.pt    best by train.best_metric
      checkpoints/step_N.pt  the last train.keep_checkpoints numbered states
      train.log              the training log
      metrics.jsonl          one JSON object per log interval and per validation
      .s2s-run               marks the directory as s2s's own (only such a directory is ever deleted)

Checkpoints are written to a temporary file and renamed, so a crash never leaves a half-written one,
and are read with `torch.load(weights_only=True)`, so loading one can never run code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch

from seq2seq.config import Config, config_to_dict, load_config, save_config
from seq2seq.errors import RunDirError
from seq2seq.model import average_state_dicts

CHECKPOINT_NAMES = ("best", "last")


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
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def marker_file(self) -> Path:
        return self.path / ".s2s-run"

    @property
    def log_file(self) -> Path:
        return self.path / "train.log"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    def is_empty(self) -> bool:
        return not self.path.exists() or not any(self.path.iterdir())

    def numbered_checkpoints(self) -> list[Path]:
        """Numbered checkpoints, oldest first."""
        found = [
            (int(m.group(1)), p)
            for p in self.checkpoint_dir.glob("step_*.pt")
            if (m := re.fullmatch(r"step_(\d+)\.pt", p.name))
        ]
        return [p for _, p in sorted(found)]

    def load_config(self) -> Config:
        """The run's resolved config; errors say what is missing."""
        if not self.path.is_dir():
            raise RunDirError(f"run directory not found: {self.path}")
        if not self.config_file.is_file():
            raise RunDirError(f"{self.path} is not an s2s run directory (no config.yaml)")
        return load_config(self.config_file)

    def checkpoint_path(self, name: str) -> Path:
        """`best`, `last`, another name in checkpoints/, or a file path -> an existing checkpoint file."""
        named = self.checkpoint_dir / f"{name}.pt"
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

    def append_metrics(self, record: dict[str, Any]) -> None:
        with self.metrics_file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def truncate_metrics(self, step: int) -> None:
        """Drop records past `step` (logged after the checkpoint a resumed run starts from)."""
        kept = [r for r in self.read_metrics() if r["step"] <= step]
        tmp = self.metrics_file.with_name(f".{self.metrics_file.name}.tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
        os.replace(tmp, self.metrics_file)

    def read_metrics(self) -> list[dict[str, Any]]:
        if not self.metrics_file.is_file():
            return []
        return [
            json.loads(line) for line in self.metrics_file.read_text(encoding="utf-8").splitlines() if line
        ]


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temporary file in the same directory, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_link(source: Path, path: Path) -> None:
    """Make `path` name the same file as `source` (hard link, copy if links are not supported)."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        tmp.write_bytes(source.read_bytes())
    os.replace(tmp, path)


def save_training_state(
    run: RunDir, state: dict[str, Any], step: int, keep: int, is_best: bool, numbered: bool = True
) -> None:
    """Write `step_N.pt` and point `last.pt` (and `best.pt` if `is_best`) at it; prune old numbered ones.

    With `numbered=False` (an interrupted run) only `last.pt` is written.
    """
    if not numbered:
        atomic_save(state, run.checkpoint_dir / "last.pt")
        return
    path = run.checkpoint_dir / f"step_{step}.pt"
    atomic_save(state, path)
    atomic_link(path, run.checkpoint_dir / "last.pt")
    if is_best:
        atomic_link(path, run.checkpoint_dir / "best.pt")
    numbered_files = run.numbered_checkpoints()
    for old in numbered_files[: max(len(numbered_files) - keep, 0)]:
        old.unlink()


def load_checkpoint(path: Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure means the file is unusable
        raise RunDirError(f"cannot load checkpoint {path}: {e}") from None


def inference_weights(state: dict[str, Any]) -> dict[str, Any]:
    """The weights to translate with: the moving average when training kept one, else the model's."""
    return state.get("ema") or state["model"]


COMPATIBLE_SECTIONS = ("data", "tokenizer", "model")


def prepare_run_dir(run: RunDir, cfg: Config, resume: bool, overwrite: bool) -> None:
    """Check the run directory's state against the command, then write the resolved config.

    A fresh run needs an empty (or tokenizer-only) directory; `--overwrite` clears an existing run;
    `--resume` needs last.pt and the same data, tokenizer and model config.
    """
    if resume and overwrite:
        raise RunDirError("choose one of --resume and --overwrite")
    started = run.checkpoint_dir.is_dir() and any(run.checkpoint_dir.iterdir()) or run.metrics_file.exists()
    if resume:
        if not (run.checkpoint_dir / "last.pt").is_file():
            raise RunDirError(
                f"nothing to resume in {run.path} (no checkpoints/last.pt); start without --resume"
            )
        _check_compatible(run.load_config(), cfg, run)
    elif not run.is_empty():
        if not run.marker_file.is_file():
            raise RunDirError(
                f"{run.path} is not empty and is not an s2s run directory; choose another run_dir"
            )
        if overwrite:
            shutil.rmtree(run.path)
        elif started:
            raise RunDirError(
                f"{run.path} already holds a training run; "
                "use --resume to continue it or --overwrite to start over"
            )
        else:  # only a tokenizer stage ran here: keep its tokenizer if the settings still match
            _check_compatible(run.load_config(), cfg, run)
    run.path.mkdir(parents=True, exist_ok=True)
    run.marker_file.touch()
    save_config(cfg, run.config_file)


def _check_compatible(saved: Config, new: Config, run: RunDir) -> None:
    old, now = config_to_dict(saved), config_to_dict(new)
    changed = [
        f"{section}.{key}: {old[section][key]!r} -> {now[section][key]!r}"
        for section in COMPATIBLE_SECTIONS
        for key in now[section]
        if old[section].get(key) != now[section][key]
    ]
    if changed:
        raise RunDirError(
            f"the config no longer matches the run in {run.path}:\n  "
            + "\n  ".join(changed)
            + "\nrestore these values, or start a new run with --overwrite"
        )


def average_checkpoints(run: RunDir, last: int, output: str) -> tuple[Path, list[Path]]:
    """Average the inference weights of the `last` newest numbered checkpoints into one file."""
    available = run.numbered_checkpoints()
    if not available:
        raise RunDirError(f"no numbered checkpoints in {run.checkpoint_dir}")
    if last > len(available):
        raise RunDirError(
            f"asked to average {last} checkpoints but {run.checkpoint_dir} has {len(available)}"
        )
    output = output.removesuffix(".pt")
    if output in CHECKPOINT_NAMES or re.fullmatch(r"step_\d+", output):
        raise RunDirError(f"--output {output} would replace a training checkpoint; choose another name")
    used = available[-last:]
    states = [load_checkpoint(p) for p in used]
    averaged = average_state_dicts([inference_weights(s) for s in states])
    path = run.checkpoint_dir / f"{output}.pt" if "/" not in output else Path(output)
    atomic_save(
        {"model": averaged, "config": states[-1]["config"], "averaged_from": [p.name for p in used]}, path
    )
    return path, used
