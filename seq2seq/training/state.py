"""The state of a training run that every checkpoint saves, and how a resumed run takes it back.

    `Progress` (where training stands) + `TrainingState` (weights, optimizer, schedule, loss scaler,
    weight average, progress) -> `to_checkpoint` -> last.pt -> `restore` on `--resume`

and where the weights start: `initial_model` (from the seed, or fine-tuning's `initialize_from`).

Writing the file is `seq2seq.checkpoint.save_training_state`'s; the random-state bookkeeping is
`seq2seq.training.random_state`'s.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import torch

from seq2seq.checkpoint import inference_weights
from seq2seq.config import ModelConfig, TrainConfig
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.device import grad_scaler
from seq2seq.errors import RunDirError
from seq2seq.models.build import Model, build_model
from seq2seq.models.encoder_decoder import count_parameters
from seq2seq.models.family import model_family
from seq2seq.models.lora import adapter_weights
from seq2seq.training.adapters import Adapters
from seq2seq.training.distributed import DistInfo
from seq2seq.training.optim import WeightAverage, build_optimizer, build_scheduler
from seq2seq.training.random_state import gather_rng_states, set_rng_state
from seq2seq.training.setup import InitWeights
from seq2seq.training.shrink import shrunk_weights

# the trainer's logger: these lines were always the trainer's, and train.log names the logger
log = logging.getLogger("seq2seq.training.trainer")


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint so a resumed run continues exactly."""

    step: int = 0
    epoch: int = 0
    next_batch: int = 0  # index of the next batch in this rank's order for `epoch`
    best: float | None = None  # best validation score so far (lower is better; BLEU is negated)
    bad_validations: int = 0  # validations in a row without improvement
    interval_loss: float = 0.0  # label-smoothed loss summed since the last log line
    interval_align: float = 0.0  # guided-alignment cost (weighted) summed since the last log line
    interval_tokens: int = 0  # target tokens of the steps counted in `interval_loss`
    interval_skipped: int = 0  # steps the fp16 loss scaler skipped since the last log line
    train_seconds: float = 0.0  # wall-clock time spent training (train.max_minutes)
    best_metric: str = ""  # what `best` measures
    inference: str = "raw"  # weights that validated better last time: "raw", or "ema" (the average)
    precision: str = ""  # what `precision: auto` chose on a CPU at the start of the run (bf16, fp32)
    batching: str = ""  # what this epoch's batch order was made for (`BatchOrder.describe`)

    def clear_interval(self) -> None:
        """Start a new log interval: nothing summed yet."""
        self.interval_loss, self.interval_align, self.interval_tokens, self.interval_skipped = 0.0, 0.0, 0, 0


@dataclass
class TrainingState:
    """What training changes as it goes: the model (already on its device) and what steps it."""

    model: Model
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    ema: WeightAverage | None  # the moving average of the weights (train.ema_decay > 0)
    progress: Progress
    adapters: Adapters | None = None  # train.lora: the model's adapters are what it trains and saves

    @classmethod
    def start(
        cls,
        model: Model,
        cfg: TrainConfig,
        device: torch.device,
        dtype: torch.dtype | None,
        batching: str,
        adapters: Adapters | None = None,
    ) -> TrainingState:
        """The state of a run at step 0; `batching` describes the batch order (`BatchOrder.describe`);
        `adapters` those `adapt` put in `model` (train.lora)."""
        optimizer = build_optimizer(model, cfg)
        return cls(
            model=model,
            optimizer=optimizer,
            scheduler=build_scheduler(optimizer, cfg),
            scaler=grad_scaler(device, dtype),
            ema=WeightAverage(model, cfg.ema_decay) if cfg.ema_decay > 0 else None,
            progress=Progress(best_metric=cfg.best_key, batching=batching),
            adapters=adapters,
        )

    def to_checkpoint(self, info: DistInfo, device: torch.device, origin: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint of this state; `origin` is the run's config and tokenizer checksums.

        Every rank takes part (the random states are gathered); rank 0 writes the result.
        """
        state = {
            "model": self.model.state_dict() if self.adapters is None else adapter_weights(self.model),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "progress": dataclasses.asdict(self.progress),
            "rng": gather_rng_states(info, device),
            "world": info.world,
            **origin,
        }
        if self.adapters is not None:
            state["adapters"] = self.adapters.record()
        if self.ema is not None:
            state["ema"] = self.ema.model_state(self.model)
            state["ema_updates"] = self.ema.updates
        state["inference"] = "ema" if self.ema is not None and self.progress.inference == "ema" else "model"
        return state

    def restore(
        self, state: dict[str, Any], cfg: TrainConfig, info: DistInfo, device: torch.device, batching: str
    ) -> None:
        """Continue from checkpoint `state`: weights, optimizer, schedule, scaler, data position and RNG.

        The config's lr, weight decay and best metric win over the checkpoint's; `batching` is what
        the batch order is made for now (an epoch split another way restarts at the next epoch).
        """
        self._load_weights(state)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        if self.ema is not None and "ema" in state:
            self.ema.load_state_dict({"weights": state["ema"], "updates": state.get("ema_updates", 0)})
        elif self.ema is not None:  # averaging was just switched on: start from the loaded weights
            self.ema = WeightAverage(self.model, cfg.ema_decay)
        self._apply_train_config(cfg)
        self.progress = p = Progress(**state["progress"])
        if not info.is_main:  # rank 0 carries the interval sums of all ranks
            p.clear_interval()
        if p.best_metric != cfg.best_key:
            p.best, p.bad_validations, p.best_metric = None, 0, cfg.best_key
        if state["world"] == info.world:
            set_rng_state(state["rng"][info.rank].cpu(), device)
        else:
            torch.manual_seed(cfg.seed + info.rank + p.step)
        if p.batching != batching and p.next_batch:
            log.warning(
                "the batches of epoch %d were made for %s, now %s: the rest of that epoch cannot be "
                "split the same way, so training continues at the start of epoch %d",
                p.epoch,
                p.batching,
                batching,
                p.epoch + 1,
            )
            p.epoch, p.next_batch = p.epoch + 1, 0
        p.batching = batching

    def _load_weights(self, state: dict[str, Any]) -> None:
        """The checkpoint's weights into the model: all of them, or a LoRA run's adapters (the frozen
        weights were loaded from base.pt, which `adapters` says these belong to)."""
        if self.adapters is None:
            self.model.load_state_dict(state["model"])
            return
        if state.get("adapters", {}).get("base_id") != self.adapters.base_id:
            raise RunDirError(
                "checkpoints/last.pt holds no LoRA adapters of this run's checkpoints/base.pt: restore "
                "the run's files, or start over with --overwrite"
            )
        missing, unexpected = self.model.load_state_dict(state["model"], strict=False)
        if unexpected or set(missing) & adapter_weights(self.model).keys():
            raise RunDirError("checkpoints/last.pt does not hold the adapters train.lora describes")

    def _apply_train_config(self, cfg: TrainConfig) -> None:
        """A resumed run follows the config's peak lr and weight decay, not the checkpoint's."""
        self.scheduler.base_lrs = [cfg.lr for _ in self.optimizer.param_groups]
        for group, factor in zip(self.optimizer.param_groups, self.scheduler.lr_lambdas, strict=True):
            lr = cfg.lr * factor(self.scheduler.last_epoch)
            group.update(lr=lr, initial_lr=cfg.lr, weight_decay=cfg.weight_decay)


def initial_model(cfg: ModelConfig, seed: int, tokenizers: TokenizerPair, init: InitWeights | None) -> Model:
    """The model at step 0: weights drawn from `seed` (the same on every rank and every run), or the
    weights of the run fine-tuning starts from (`init`)."""
    torch.manual_seed(seed)
    model = build_model(
        cfg, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size, tokenizers.src.word_starts()
    )
    if init is not None:
        initialize_from(model, cfg, init)
    log.info(
        "model: %s parameters, vocabulary %d/%d",
        f"{count_parameters(model):,}",
        tokenizers.src.vocab_size,
        tokenizers.tgt.vocab_size,
    )
    return model


def initialize_from(model: Model, cfg: ModelConfig, init: InitWeights) -> None:
    """Fine-tuning: the weights of `train.init_from` (the run already has their tokenizer); a model
    with fewer layers takes the layers chosen (`seq2seq.training.shrink`)."""
    stacks = model_family(cfg).layer_stacks
    model.load_state_dict(shrunk_weights(inference_weights(init.state, init.path), stacks, init.layers))
    log.info(
        "initialized from %s (step %s)%s; optimizer, schedule and data order start afresh",
        init.path,
        init.state.get("progress", {}).get("step", "?"),
        "".join(f", {key} from its {list(layers)}" for key, layers in init.layers.items()),
    )
