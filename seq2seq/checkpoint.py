"""Checkpoint files: written whole or not at all, read without running code, checked against the run.

Checkpoints are written to a temporary file and renamed, so a crash or a full disk never leaves a
half-written one, and are read with `torch.load(weights_only=True)`, so loading one can never run
code. Each holds the config and the tokenizer checksums it was trained with, so a checkpoint from
another run is refused instead of producing garbage. Where they live is `seq2seq.rundir`'s business.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.config import Config, config_differences, config_to_dict
from seq2seq.errors import RunDirError
from seq2seq.files import atomic_output, changed_files, check_outputs, disk_error
from seq2seq.rundir import CHECKPOINT_NAMES, RunDir


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temporary file in the same directory, fsync, then rename over `path`.

    A failed write (a full disk makes torch.save raise RuntimeError) names `path` and leaves the
    previous file intact.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise disk_error(path, e) from None
    with atomic_output(path, binary=True) as f:
        try:
            torch.save(obj, f)
        except RuntimeError as e:
            raise disk_error(path, e) from None


def atomic_link(source: Path, path: Path) -> None:
    """Make `path` name the same file as `source` (hard link, copy if links are not supported)."""
    tmp = path.with_name(f".{path.name}.link.tmp")
    try:
        tmp.unlink(missing_ok=True)
        try:
            os.link(source, tmp)
        except OSError:
            tmp.write_bytes(source.read_bytes())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise disk_error(path, e) from None


RESUME_ONLY = ("optimizer", "scheduler", "scaler", "rng")  # state only `--resume` needs


def save_training_state(
    run: RunDir,
    state: dict[str, Any],
    step: int,
    keep: int,
    is_best: bool,
    numbered: bool = True,
    optimizer_in_last_only: bool = False,
) -> None:
    """Write `step_N.pt`, `last.pt` (and `best.pt` if `is_best`); prune old numbered ones.

    With `optimizer_in_last_only` (train.keep_optimizer: last) the numbered checkpoint (and so
    `best.pt`) leaves out the optimizer and the other resume-only state, a third of the size, and
    `last.pt` is written in full beside it; otherwise `last.pt` is the numbered file itself (a hard
    link). With `numbered=False` (an interrupted run) only `last.pt` is written.
    """
    last = run.checkpoint_file("last")
    if not numbered:
        atomic_save(state, last)
        return
    path = run.step_checkpoint(step)
    if optimizer_in_last_only:
        atomic_save({k: v for k, v in state.items() if k not in RESUME_ONLY}, path)
        atomic_save(state, last)
    else:
        atomic_save(state, path)
        atomic_link(path, last)
    if is_best:
        atomic_link(path, run.checkpoint_file("best"))
    numbered_files = run.numbered_checkpoints()
    for old in numbered_files[: max(len(numbered_files) - keep, 0)]:
        old.unlink()


def load_checkpoint(path: Path, device: str | torch.device = "cpu", mmap: bool = False) -> dict[str, Any]:
    """The checkpoint's contents; with `mmap` its tensors are mapped, not read (to look at its records)."""
    try:
        return torch.load(path, map_location=device, weights_only=True, mmap=mmap)
    except Exception as e:  # noqa: BLE001 - any unpickling failure means the file is unusable
        raise RunDirError(f"cannot load checkpoint {path}: {e}") from None


def inference_weights(state: dict[str, Any]) -> dict[str, Any]:
    """The weights to translate with: those that validated better (raw or moving average) at this step."""
    return state[state.get("inference", "ema" if "ema" in state else "model")]


def checkpoint_inputs(cfg: Config, tokenizer_sums: dict[str, str]) -> dict[str, Any]:
    """What a checkpoint records about its origin: the config and the tokenizer checksums."""
    return {"config": config_to_dict(cfg), "tokenizer_sha256": tokenizer_sums}


def check_fits_run(state: dict[str, Any], path: Path, cfg: Config, tokenizer_sums: dict[str, str]) -> None:
    """Refuse a checkpoint whose model, tokenizer settings or tokenizer files differ from the run's."""
    saved = config_differences(state.get("config", {}), config_to_dict(cfg), ("model", "tokenizer"))
    differences = [f"{key}: checkpoint {old!r}, run {value!r}" for key, old, value in saved]
    differences += [
        f"tokenizer/{name}: the checkpoint was trained with another tokenizer file"
        for name in changed_files(state.get("tokenizer_sha256") or {}, tokenizer_sums)
    ]
    if differences:
        raise RunDirError(
            f"{path} does not belong to this run:\n  "
            + "\n  ".join(differences)
            + "\nuse a checkpoint of this run, or the run directory the checkpoint came from"
        )


@dataclass(frozen=True)
class InitSource:
    """Where a fine-tuning run takes its weights and tokenizer from."""

    run: RunDir
    checkpoint: Path


def init_source(cfg: Config) -> InitSource:
    """`train.init_from` (a run directory, or a checkpoint file inside one) as a run and a checkpoint."""
    given = Path(cfg.train.init_from)
    if given.is_file():
        run = RunDir(given.parent.parent)  # RUN/checkpoints/NAME.pt
        if not run.config_file.is_file():
            raise RunDirError(
                f"train.init_from: {given} is not inside an s2s run directory; the weights need the "
                "run's tokenizer and config, so give the run directory (or a checkpoint inside it)"
            )
        return InitSource(run, given)
    if not given.is_dir():
        raise RunDirError(f"train.init_from: {given} is neither a run directory nor a checkpoint file")
    run = RunDir(given)
    run.load_config()  # says so when it is not a run directory
    return InitSource(run, run.checkpoint_path(cfg.train.init_checkpoint))


def check_can_init(source: InitSource, cfg: Config) -> None:
    """The new run's model and tokenizer sections must equal the source run's, or an error lists each."""
    saved = config_to_dict(source.run.load_config())
    differences = [
        f"{key}: {old!r} in {source.run.path}, {value!r} here"
        for key, old, value in config_differences(saved, config_to_dict(cfg), ("model", "tokenizer"))
    ]
    if differences:
        raise RunDirError(
            "train.init_from: this config does not describe the model it starts from:\n  "
            + "\n  ".join(differences)
            + f"\ncopy the model and tokenizer sections of {source.run.config_file}"
        )


@torch.no_grad()
def average_state_dicts(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Element-wise mean of model state dicts with identical keys (checkpoint averaging)."""
    keys = states[0].keys()
    if any(s.keys() != keys for s in states):
        raise ValueError("state dicts have different keys")
    return {
        k: (sum(s[k].double() for s in states) / len(states)).to(states[0][k].dtype)
        if states[0][k].is_floating_point()
        else states[0][k]
        for k in keys
    }


def average_checkpoints(run: RunDir, last: int | None, output: str) -> tuple[Path, list[Path]]:
    """Average the inference weights of the `last` newest numbered checkpoints (None: all) into one file."""
    available = run.numbered_checkpoints()
    if not available:
        raise RunDirError(f"no numbered checkpoints in {run.checkpoint_dir}")
    last = len(available) if last is None else last
    if last > len(available):
        raise RunDirError(
            f"asked to average {last} checkpoints but {run.checkpoint_dir} has {len(available)}"
        )
    output = output.removesuffix(".pt")
    if output in CHECKPOINT_NAMES or re.fullmatch(r"step_\d+", output):
        raise RunDirError(f"--output {output} would replace a training checkpoint; choose another name")
    path = run.checkpoint_file(output) if "/" not in output else Path(f"{output}.pt")
    used = available[-last:]
    check_outputs({"--output": path}, run.own_files())
    states = [load_checkpoint(p) for p in used]
    averaged = average_state_dicts([inference_weights(s) for s in states])
    kept = {k: states[-1][k] for k in ("config", "tokenizer_sha256") if k in states[-1]}
    atomic_save({"model": averaged, **kept, "averaged_from": [p.name for p in used]}, path)
    return path, used
