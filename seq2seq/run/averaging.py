"""`s2s average`: the weights of a run's last numbered checkpoints averaged into one checkpoint file.

Each checkpoint is read as translation reads it (`checkpoint.inference_weights`: a LoRA run's adapters
merged into its frozen weights), every one checked to belong to the run and to hold the same tensors;
the mean is summed in float64. Which checkpoints, and where the mean goes, `averaged_checkpoints`
(`seq2seq.run.average_choice`) decides first, without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.checkpoint import atomic_save, check_checkpoints_fit, inference_weights, load_checkpoint
from seq2seq.config import Config
from seq2seq.errors import RunDirError


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


def average_checkpoints(cfg: Config, tokenizer_sums: dict[str, str], used: list[Path], path: Path) -> None:
    """Average the inference weights of the checkpoints `used` into `path` (`averaged_checkpoints`
    chose both). Every one must belong to the run (`check_checkpoints_fit`: `tokenizer_sums` are the
    run's tokenizer files today; `cfg` its config) and have the same tensors.
    """
    states = [(p, load_checkpoint(p)) for p in used]
    check_checkpoints_fit(states, cfg, tokenizer_sums)
    weights = [(p, inference_weights(s, p)) for p, s in states]
    check_same_tensors(weights)
    averaged = average_state_dicts([w for _, w in weights])
    newest = states[-1][1]
    kept = {k: newest[k] for k in ("config", "tokenizer_sha256")}
    atomic_save({"model": averaged, **kept, "averaged_from": [p.name for p in used]}, path)
