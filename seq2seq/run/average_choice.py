"""Which checkpoints `s2s average` averages and where it writes the mean, decided without torch, so
that a wrong run, count or name is refused before the weights (`seq2seq.run.averaging`) load."""

from __future__ import annotations

import os
import re
from pathlib import Path

from seq2seq.errors import RunDirError
from seq2seq.files import check_outputs
from seq2seq.run.layout import CHECKPOINT_NAMES, RunDir
from seq2seq.run.parts import run_parts


def averaged_checkpoints(run: RunDir, last: int | None, output: str) -> tuple[list[Path], Path]:
    """Of a run whose config loads, the `last` newest numbered checkpoints (None: all), and where their
    mean is written: not a training checkpoint's name, nor one of `run_parts` (but a new or averaged
    file in checkpoints/)."""
    available = run.numbered_checkpoints()
    if not available:
        raise RunDirError(f"no numbered checkpoints in {run.checkpoint_dir}")
    last = len(available) if last is None else last
    if last > len(available):
        raise RunDirError(
            f"asked to average {last} checkpoints but {run.checkpoint_dir} has {len(available)}"
        )
    path = average_output(run, output)
    check_outputs({"--output": path}, run_parts(run, whole_checkpoints=False))
    return available[-last:], path


def average_output(run: RunDir, output: str) -> Path:
    """Where `s2s average --output` writes: a name in checkpoints/, or a path (`.pt` added). A training
    checkpoint's name (best, last, step_N) is refused however the path is spelled: those are training's."""
    name = output.removesuffix(".pt")
    path = Path(f"{name}.pt") if "/" in name else run.checkpoint_file(name)
    for stem in (path.name, Path(os.path.realpath(path)).name):  # a link may name one too
        stem = stem.removesuffix(".pt")
        if stem in CHECKPOINT_NAMES or re.fullmatch(r"step_\d+", stem):
            raise RunDirError(
                f"--output {output} would replace a training checkpoint or pass for one ({stem}.pt: "
                "best, last and step_N are training's names); choose another name"
            )
    if not name or name.endswith("/"):
        raise RunDirError(f"--output {output!r}: give a name for the averaged checkpoint")
    return path
