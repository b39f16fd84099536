"""The `train.lora` block: fine-tune low-rank adapters beside frozen weights (LoRA)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

from seq2seq.config.rules import broken

# the projections an adapter can sit beside, by the part of a layer they belong to
Target = Literal["self_attention", "cross_attention", "feed_forward"]
TARGETS: tuple[str, ...] = typing.get_args(Target)
MAX_RANK = 1024  # past any model's width here: a typo, not a choice


@dataclass(frozen=True)
class LoraConfig:
    """LoRA (Hu et al., 2021): each chosen projection W x becomes W x + (alpha / rank) B A x, with A
    (rank x in) and B (out x rank) trained and every weight of the model frozen. B starts at zero, so
    training starts from exactly the model of train.init_from. Checkpoints hold the adapters alone; the
    frozen weights are saved once, as checkpoints/base.pt; every reader of the run (translate, export,
    average, init_from) merges the two into ordinary weights."""

    rank: int = 0  # 0 - 1024: the adapters' rank (0 = off: every weight is trained)
    alpha: float = 16.0  # > 0: the adapters' output is scaled by alpha / rank
    dropout: float = 0.0  # 0 <= p < 1: dropout on an adapter's input
    # which projections of every layer get an adapter: self_attention (queries, keys and values, and
    # the output), cross_attention (the same, to the encoder's memory), feed_forward (both)
    targets: tuple[str, ...] = TARGETS  # one name or a list (each checked against TARGETS)

    @property
    def active(self) -> bool:
        """Whether the run trains adapters instead of the weights."""
        return self.rank > 0

    @property
    def scale(self) -> float:
        """What an adapter's output is multiplied by."""
        return self.alpha / self.rank

    def problems(self, *, init_from: str, ema_decay: float) -> list[str]:
        """`init_from` is train.init_from (the weights adapters sit beside), `ema_decay` train.ema_decay."""
        where = "train.lora"
        unknown = [t for t in self.targets if t not in TARGETS]
        return broken(
            [
                (not 0 <= self.rank <= MAX_RANK, f"{where}.rank: must be in [0, {MAX_RANK}] (0 = off)"),
                (self.alpha <= 0, f"{where}.alpha: must be > 0"),
                (not 0 <= self.dropout < 1, f"{where}.dropout: must be in [0, 1)"),
                (
                    bool(unknown),
                    f"{where}.targets: {', '.join(map(str, unknown))} is not one of {', '.join(TARGETS)}",
                ),
                (
                    self.active and not self.targets,
                    f"{where}.targets: name at least one of {', '.join(TARGETS)}",
                ),
                (
                    self.active and not init_from,
                    f"{where}.rank: adapters fine-tune the weights of a trained model: set train.init_from "
                    "(a run directory, an imported one too)",
                ),
                (
                    self.active and ema_decay > 0,
                    f"{where}.rank: a moving average of the weights (train.ema_decay) is not kept for "
                    "adapters: set one of them to 0",
                ),
            ]
        )
