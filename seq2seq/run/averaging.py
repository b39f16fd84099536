"""`s2s average`: the weights of a run's last numbered checkpoints averaged into one checkpoint file.

Each checkpoint is read as translation reads it (`checkpoint.inference_weights`: a LoRA run's adapters
merged into its frozen weights), every one checked to belong to the run and to hold the same tensors;
the mean is summed in float64. The output may not take a training checkpoint's name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.checkpoint import atomic_save, check_checkpoints_fit, inference_weights, load_checkpoint
from seq2seq.errors import RunDirError
from seq2seq.files import check_outputs
from seq2seq.run.layout import CHECKPOINT_NAMES, RunDir
from seq2seq.run.parts import run_parts


def check_same_tensors(weights: Sequence[tuple[Path, dict[str, Tensor]]]) -> None:
    """Refuse weights to average that do not all have the same tensor names and shapes, listing (the
    first few) differing tensors with the shape in each checkpoint."""
    names = sorted(set().union(*(w.keys() for _, w in weights)))
    differing = []
    for name in names:
        shapes = [tuple(w[name].shape) if name in w else "missing" for _, w in weights]
        if len(set(shapes)) > 1:
            found = ", ".join(
                f"{shape} in {path.name}" for shape, (path, _) in zip(shapes, weights, strict=True)
            )
            differing.append(f"{name}: {found}")
    if differing:
        raise RunDirError(
            "checkpoints of different models cannot be averaged:\n  " + "\n  ".join(differing[:5])
        )


@torch.no_grad()
def average_state_dicts(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """Element-wise mean of model state dicts with identical keys (checkpoint averaging). Names that
    share one tensor in the first state (tied embeddings) share their mean too, as in the model."""
    keys = states[0].keys()
    if any(s.keys() != keys for s in states):
        raise ValueError("state dicts have different keys")
    means: dict[tuple[int, tuple[int, ...], tuple[int, ...]], Tensor] = {}
    averaged = {}
    for k in keys:
        first = states[0][k]
        if not first.is_floating_point():
            averaged[k] = first
            continue
        same = (first.data_ptr(), tuple(first.shape), first.stride())
        if same not in means:
            means[same] = _mean([s[k] for s in states])
        averaged[k] = means[same]
    return averaged


def _mean(tensors: list[Tensor]) -> Tensor:
    """Element-wise mean of same-shaped tensors, summed in float64, in their dtype."""
    total = sum((t.double() for t in tensors[1:]), tensors[0].double())
    return (total / len(tensors)).to(tensors[0].dtype)


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


def average_checkpoints(
    run: RunDir, tokenizer_sums: dict[str, str], last: int | None, output: str
) -> tuple[Path, list[Path]]:
    """Average the inference weights of the `last` newest numbered checkpoints (None: all) into one file.

    Every one must belong to the run (`check_checkpoints_fit`: `tokenizer_sums` are the run's tokenizer
    files today) and have the same tensors; the output may not be a training checkpoint's name, nor one
    of `run_parts` (but a new or averaged file in checkpoints/).
    """
    cfg = run.load_config()
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
    used = available[-last:]
    states = [(p, load_checkpoint(p)) for p in used]
    check_checkpoints_fit(states, cfg, tokenizer_sums)
    weights = [(p, inference_weights(s, p)) for p, s in states]
    check_same_tensors(weights)
    averaged = average_state_dicts([w for _, w in weights])
    newest = states[-1][1]
    kept = {k: newest[k] for k in ("config", "tokenizer_sha256")}
    atomic_save({"model": averaged, **kept, "averaged_from": [p.name for p in used]}, path)
    return path, used
