"""A LoRA run (train.lora): its frozen weights saved once as checkpoints/base.pt, adapters beside them.

    the model at step 0 (train.init_from's weights) -> `adapt`: a new run writes them to base.pt, a
    resumed one reads them back from it -> `add_adapters` -> training updates the adapters alone ->
    each checkpoint holds the adapters and `Adapters.record` (which base, what scale)

Reading a LoRA checkpoint merges the adapters into base.pt's weights (`checkpoint.inference_weights`),
so translate, evaluate, export, average and a later init_from see a plain model.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from seq2seq.checkpoint import atomic_save, load_checkpoint
from seq2seq.config import Config
from seq2seq.errors import RunDirError
from seq2seq.models.encoder_decoder import count_parameters
from seq2seq.models.lora import add_adapters, trainable_parameters
from seq2seq.run.layout import RunDir

log = logging.getLogger("seq2seq.training.trainer")

BASE = "base"  # checkpoints/base.pt


@dataclass(frozen=True)
class Adapters:
    """What each checkpoint of a LoRA run records of its adapters."""

    base_id: str  # the fingerprint of base.pt's weights, which the adapters belong to
    scale: float  # train.lora's alpha / rank

    def record(self) -> dict[str, Any]:
        """The checkpoint's `adapters` entry (`checkpoint.adapter_base` reads it)."""
        return {"base": f"{BASE}.pt", "base_id": self.base_id, "scale": self.scale}


def adapt(
    model: nn.Module, cfg: Config, run: RunDir, resume: bool, origin: dict[str, Any], write: bool
) -> Adapters | None:
    """With train.lora: save `model`'s weights as the run's base.pt (a new run; rank 0 `write`s) or load
    them from it (`resume`), then freeze them and add the adapters. None without train.lora.

    `origin` is what every checkpoint of the run records (`checkpoint_inputs`), so base.pt is also a
    checkpoint of the run that translate reads (`--checkpoint base`: the model before fine-tuning)."""
    lora = cfg.train.lora
    if not lora.active:
        return None
    path = run.checkpoint_file(BASE)
    if resume:
        if not path.is_file():
            raise RunDirError(
                f"{path} is missing: a LoRA run's checkpoints hold adapters only, and this file holds the "
                "weights they were trained beside; restore it, or start over with --overwrite"
            )
        base = load_checkpoint(path)
        model.load_state_dict(base["model"])
        base_id = str(base.get("base_id"))
    else:
        base_id = fingerprint(model)
        if write:
            atomic_save({"model": model.state_dict(), **origin, "base_id": base_id}, path)
    total = count_parameters(model)
    adapted = add_adapters(model, lora)
    log.info(
        "LoRA: rank %d, alpha %g on %d projections (%s); %s trainable parameters of %s; frozen weights in %s",
        lora.rank,
        lora.alpha,
        len(adapted),
        ", ".join(lora.targets),
        f"{trainable_parameters(model):,}",
        f"{total:,}",
        path,
    )
    return Adapters(base_id, lora.scale)


@torch.no_grad()
def fingerprint(model: nn.Module) -> str:
    """sha256 of the model's tensors, by name (the same on every rank: no file is read)."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]
