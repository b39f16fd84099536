"""The `train` section: optimization, batching, stopping, checkpointing and validation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from seq2seq.config.bounds import MAX_BATCH_TOKENS, MAX_BEAM, MAX_SEED, MAX_THREADS
from seq2seq.config.rules import Rule, broken

MAX_ACCUM_STEPS = 1024  # batches summed into one update
DEFAULT_BLEU_TOKENIZE = "13a"  # sacreBLEU's own default, built into every version of it


@dataclass(frozen=True)
class TrainConfig:
    """Optimization, batching, checkpointing and validation."""

    seed: int = 1
    init_from: str = ""  # fine-tune: start from this run directory's weights (or this checkpoint file)
    init_checkpoint: str = "best"  # which checkpoint of the init_from run directory
    # a smaller model from init_from's (a student): which of its layers starts each of this model's
    # (default: as many as this model has, evenly spread, the first and the last among them)
    init_encoder_layers: tuple[int, ...] = ()
    init_decoder_layers: tuple[int, ...] = ()
    # take the tokenizer of this run directory instead of training one (runs that share a tokenizer can
    # be ensembled); the tokenizer sections must be equal
    tokenizer_from: str = ""
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    max_tokens: int = 4096  # per batch (and per GPU), padding included
    accum_steps: int = 1
    lr: float = 5e-4  # peak learning rate
    schedule: Literal["inverse_sqrt", "linear", "cosine", "constant"] = "inverse_sqrt"
    warmup_steps: int = 4000  # linear warm-up from 0 to lr; the peak is reached at this step
    min_lr: float = 0.0  # floor after the warm-up; linear and cosine reach it at max_steps
    weight_decay: float = 0.0
    clip_norm: float = 1.0  # 0 = no clipping
    label_smoothing: float = 0.1
    max_steps: int = 0  # 0 = no limit
    max_epochs: int = 0  # 0 = no limit
    max_minutes: float = 0.0  # stop after this much wall-clock training time (0 = no limit)
    log_every: int = 50
    valid_every: int = 500
    keep_checkpoints: int = 5  # numbered checkpoints kept besides last.pt and best.pt
    keep_optimizer: Literal["last", "all"] = "last"  # optimizer state in last.pt only, or in every checkpoint
    best_metric: Literal["loss", "bleu", "accuracy"] = "loss"  # accuracy: readers
    best_direction: str = ""  # a multilingual run: the direction best_metric reads ("" = their mean)
    patience: int = 0  # stop after this many validations without improvement (0 = never)
    valid_bleu: bool = True  # decode the validation set and compute BLEU at each validation
    valid_bleu_tokenize: str = (
        DEFAULT_BLEU_TOKENIZE  # sacreBLEU tokenizer for validation BLEU: 13a, intl, zh, ja-mecab, char...
    )
    valid_beam: int = 1
    valid_subset: int = 0  # decode only the first N validation sentences for BLEU (0 = all)
    valid_samples: int = 3  # sample translations written to the log at each validation
    ema_decay: float = 0.0  # exponential moving average of weights, used for validation and saving
    num_threads: int = 0  # CPU threads for torch (0 = torch's default)
    compile: bool = False  # torch.compile the model
    tensorboard: bool = False  # also write the metrics as TensorBoard curves to RUN_DIR/tensorboard/

    @property
    def best_key(self) -> str:
        """What `best.pt` is chosen by, as a checkpoint records it: `bleu`, or `bleu de-en`."""
        return f"{self.best_metric} {self.best_direction}" if self.best_direction else self.best_metric

    def problems(self, directions: Sequence[str] = ()) -> list[str]:
        """Every broken rule of this section (those the libraries would refuse mid-run included);
        `directions` are those validated (data.valid), which train.best_direction must be one of."""
        return broken(
            [
                *self._init_rules(),
                *self._optimizer_rules(),
                *self._stopping_rules(),
                *self._validation_rules(directions),
            ]
        )

    @property
    def init_layers(self) -> dict[str, tuple[int, ...]]:
        """`init_encoder_layers` and `init_decoder_layers` by the `model` key that counts the layers."""
        return {"encoder_layers": self.init_encoder_layers, "decoder_layers": self.init_decoder_layers}

    def _init_rules(self) -> list[Rule]:
        """Which layers of `init_from` start a smaller model (whether it has them, the plan checks), and
        where the tokenizer comes from."""
        return [
            (
                bool(self.tokenizer_from and self.init_from),
                "train.tokenizer_from: a fine-tuned run (train.init_from) takes the tokenizer of the run it "
                "starts from: leave tokenizer_from out",
            ),
            *(
                rule
                for key, layers in self.init_layers.items()
                for rule in (
                    (any(i < 0 for i in layers), f"train.init_{key}: layer numbers count from 0"),
                    (bool(layers) and not self.init_from, f"train.init_{key}: only with train.init_from"),
                )
            ),
        ]

    def _optimizer_rules(self) -> list[Rule]:
        """Batches, the learning-rate schedule and the update (AdamW refuses some of these itself)."""
        return [
            (
                not 1 <= self.max_tokens <= MAX_BATCH_TOKENS,
                f"train.max_tokens: must be in [1, {MAX_BATCH_TOKENS}] (a batch's activations and logits "
                "grow with it)",
            ),
            (
                not 1 <= self.accum_steps <= MAX_ACCUM_STEPS,
                f"train.accum_steps: must be in [1, {MAX_ACCUM_STEPS}] (batches summed into one update)",
            ),
            (not 0 <= self.seed <= MAX_SEED, f"train.seed: must be in [0, {MAX_SEED}]"),
            (not 0 < self.lr <= 1, "train.lr: must be in (0, 1] (AdamW moves each weight about lr a step)"),
            (self.weight_decay < 0, "train.weight_decay: must be >= 0"),
            (
                self.lr * self.weight_decay > 1,
                "train.weight_decay: train.lr x weight_decay must be <= 1 (AdamW shrinks each weight by "
                "that share a step: more would flip its sign)",
            ),
            (self.warmup_steps < 0, "train.warmup_steps: must be >= 0"),
            (
                self.schedule == "inverse_sqrt" and self.warmup_steps == 0,
                "train.warmup_steps: inverse_sqrt decays as sqrt(warmup_steps / step), so it needs >= 1 "
                "(for no warm-up at all choose train.schedule: constant, linear or cosine)",
            ),
            (
                self.schedule in ("linear", "cosine") and self.max_steps <= self.warmup_steps,
                f"train.max_steps: the {self.schedule} schedule decays until max_steps, which must be set "
                "and larger than train.warmup_steps",
            ),
            (not 0 <= self.min_lr <= self.lr, "train.min_lr: must be in [0, train.lr]"),
            (self.clip_norm < 0, "train.clip_norm: must be >= 0"),
            (not 0 <= self.label_smoothing < 1, "train.label_smoothing: must be in [0, 1)"),
        ]

    def _stopping_rules(self) -> list[Rule]:
        """A run must stop by itself: at least one of the three limits is set."""
        return [
            (self.max_steps < 0, "train.max_steps: must be >= 0"),
            (self.max_epochs < 0, "train.max_epochs: must be >= 0"),
            (self.max_minutes < 0, "train.max_minutes: must be >= 0"),
            (
                self.max_steps == 0 and self.max_epochs == 0 and self.max_minutes == 0,
                "train.max_steps: set train.max_steps, train.max_epochs or train.max_minutes",
            ),
        ]

    def _validation_rules(self, directions: Sequence[str]) -> list[Rule]:
        """Logging, checkpoints, validation and where the run goes."""
        return [
            (self.log_every < 1, "train.log_every: must be >= 1"),
            (self.valid_every < 1, "train.valid_every: must be >= 1"),
            (self.keep_checkpoints < 0, "train.keep_checkpoints: must be >= 0"),
            (self.patience < 0, "train.patience: must be >= 0"),
            (not 1 <= self.valid_beam <= MAX_BEAM, f"train.valid_beam: must be in [1, {MAX_BEAM}]"),
            (self.valid_subset < 0, "train.valid_subset: must be >= 0"),
            (self.valid_samples < 0, "train.valid_samples: must be >= 0"),
            (
                not 0 <= self.num_threads <= MAX_THREADS,
                f"train.num_threads: must be in [0, {MAX_THREADS}]",
            ),
            (
                self.best_metric == "bleu" and not self.valid_bleu,
                "train.best_metric: 'bleu' needs train.valid_bleu: true",
            ),
            (not 0 <= self.ema_decay < 1, "train.ema_decay: must be in [0, 1)"),
            (
                bool(self.best_direction) and self.best_direction not in directions,
                f"train.best_direction: {self.best_direction!r} is not a direction of data.valid "
                f"({', '.join(d for d in directions if d) or 'none: a bilingual run has one'})",
            ),
            (
                not _valid_device(self.device),
                f"train.device: {self.device!r} is not one of auto, cpu, cuda, cuda:N",
            ),
            *_bleu_tokenizer_rules(self.valid_bleu_tokenize),
        ]


def _bleu_tokenizer_rules(name: str) -> list[Rule]:
    """sacreBLEU knows the tokenizer and has what it needs (some need an extra package). The default
    is known without importing sacreBLEU, which a command that only translates never needs."""
    if name == DEFAULT_BLEU_TOKENIZE:
        return []
    from sacrebleu.metrics import BLEU  # only when a config is checked, not on every import

    if name not in BLEU.TOKENIZERS:
        return [(True, f"train.valid_bleu_tokenize: {name!r} is not one of {', '.join(BLEU.TOKENIZERS)}")]
    try:
        BLEU(tokenize=name)
    except ImportError as e:
        return [(True, f"train.valid_bleu_tokenize: {name} needs an extra package: {e}")]
    return []


def _valid_device(device: str) -> bool:
    return device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit())
