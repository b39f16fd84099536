"""The `train` section: optimization, batching, stopping, checkpointing and validation."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.bounds import MAX_BATCH_TOKENS, MAX_BEAM, MAX_SEED, MAX_THREADS
from seq2seq.config.guided_alignment import GuidedAlignmentConfig
from seq2seq.config.lora import LoraConfig
from seq2seq.config.rules import Rule, broken

# how a model computes (`train.precision`, `--precision`): `seq2seq.device.autocast_dtype` says what each is
Precision = Literal["auto", "fp32", "bf16", "fp16"]
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)

GIVEN = "given"  # with train.valid_augment, a bilingual run's validation set as given
MAX_ACCUM_STEPS = 1024  # batches summed into one update
DEFAULT_BLEU_TOKENIZE = "13a"  # sacreBLEU's own default, built into every version of it


@dataclass(frozen=True)
class TrainConfig:
    """Optimization, batching, checkpointing and validation."""

    seed: int = 1  # 0 - 2^31 - 1: seeds the weights, the batch order and dropout
    init_from: str = ""  # fine-tune: start from this run directory's weights (or this checkpoint file)
    init_checkpoint: str = "best"  # which checkpoint of the init_from run directory
    # a smaller model from init_from's (a student): which of its layers starts each of this model's
    # (default: as many as this model has, evenly spread, the first and the last among them)
    init_encoder_layers: tuple[int, ...] = ()
    init_decoder_layers: tuple[int, ...] = ()  # the same, for the decoder's layers
    # fine-tune low-rank adapters beside the frozen weights of init_from instead of every weight
    lora: LoraConfig = field(default_factory=LoraConfig)
    # take the tokenizer of this run directory instead of training one (runs that share a tokenizer can
    # be ensembled); the tokenizer sections must be equal; not with init_from, which brings its own
    tokenizer_from: str = ""
    # auto (CUDA when available), cpu, cuda, cuda:N; under torchrun each process takes the GPU of its
    # local rank (choose GPUs with CUDA_VISIBLE_DEVICES)
    device: str = "auto"
    # auto: bf16 autocast on GPUs that compute in bf16 (compute capability 8.0 and up), fp16 with a
    # grad scaler on older ones; on a CPU bf16 where its features make it faster (AMX, or AMD's
    # AVX512-BF16), else fp32, decided from the features alone, logged and kept on resume. fp32 is
    # true fp32 (no TF32); fp16 is for GPUs only
    precision: Precision = "auto"
    max_tokens: int = 4096  # per batch (and per GPU), padding included
    accum_steps: int = 1  # 1 - 1024: batches accumulated into one optimizer step
    lr: float = 5e-4  # (0, 1]: peak learning rate (AdamW, betas 0.9/0.98)
    # after the warm-up: inverse_sqrt decays as sqrt(warmup_steps / step); linear and cosine decay to
    # min_lr at max_steps (which they need); constant stays at the peak
    schedule: Literal["inverse_sqrt", "linear", "cosine", "constant"] = "inverse_sqrt"
    warmup_steps: int = 4000  # linear warm-up from 0 to lr; the peak is reached at this step
    min_lr: float = 0.0  # floor after the warm-up; linear and cosine reach it at max_steps
    weight_decay: float = 0.0  # >= 0: AdamW weight decay
    clip_norm: float = 1.0  # >= 0: gradient norm clipping (0 = none)
    label_smoothing: float = 0.1  # 0 <= e < 1: label smoothing of the cross-entropy
    # train one cross-attention head towards word alignments made when the corpus is prepared
    guided_alignment: GuidedAlignmentConfig = field(default_factory=GuidedAlignmentConfig)
    max_steps: int = 0  # 0 = no limit
    max_epochs: int = 0  # 0 = no limit
    # stop after this much wall-clock training time (0 = no limit); a run needs one of the three limits
    max_minutes: float = 0.0
    log_every: int = 50  # >= 1: steps between train records (log line, metrics.jsonl, progress bar)
    # >= 1: steps between validations and numbered checkpoints; training also validates when it ends
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
    valid_beam: int = 1  # beam of validation decoding (1 = greedy)
    valid_subset: int = 0  # decode only the first N validation sentences for BLEU (0 = all)
    valid_samples: int = 3  # sample translations written to the log at each validation
    # validate also on one copy of each validation set modified like real text, at these shares (the
    # modifiers of data.corpora[].augment but noise and subword; fixed by train.seed): its scores are
    # logged beside the set as given, and best_metric reads their mean (or train.best_direction: given,
    # augmented)
    valid_augment: AugmentConfig = field(default_factory=AugmentConfig)
    # 0 <= d < 1: keep an exponential moving average of the weights (e.g. 0.999, with a warm-up);
    # validation scores it and the raw weights, and the better is used (0 = off)
    ema_decay: float = 0.0
    num_threads: int = 0  # CPU threads for torch (0 = torch's default)
    compile: bool = False  # torch.compile the model (dynamic shapes: compiled once, not per shape)
    # 0: each batch as long as its longest pair. N: lengths padded up to a multiple of N and rows to
    # max_tokens // length, so an epoch's batches take at most max_len / N shapes: with train.compile
    # each shape gets its own graph (and on one GPU a CUDA graph) once; costs padding (e.g. 8 or 16)
    shape_multiple: int = 0
    tensorboard: bool = False  # also write the metrics as TensorBoard curves to RUN_DIR/tensorboard/

    @property
    def best_key(self) -> str:
        """What `best.pt` is chosen by, as a checkpoint records it: `bleu`, or `bleu de-en`."""
        return f"{self.best_metric} {self.best_direction}" if self.best_direction else self.best_metric

    def problems(
        self,
        *,
        directions: Sequence[str] = (),
        arch: str,
        decoder_layers: int,
        sequence_targets: bool = True,
        right_to_left: bool = False,
    ) -> list[str]:
        """Every broken rule of this section (those the libraries would refuse mid-run included);
        `directions` are those of data.valid, whose `validated` names train.best_direction must be one of;
        `arch` and `decoder_layers` are model.arch and model.decoder_layers (guided alignment's);
        `sequence_targets` whether model.task's targets are a sequence (fixed shapes pad them);
        `right_to_left` model.right_to_left (guided alignment's)."""
        return (
            broken(
                [
                    *self._init_rules(),
                    *self._optimizer_rules(),
                    *self._shape_rules(sequence_targets),
                    *self._stopping_rules(),
                    *self._validation_rules(self.validated(directions)),
                ]
            )
            + self.valid_augment.problems("train.valid_augment")
            + self.guided_alignment.problems(
                arch=arch, decoder_layers=decoder_layers, right_to_left=right_to_left
            )
            + self.lora.problems(init_from=self.init_from, ema_decay=self.ema_decay)
        )

    def validated(self, directions: Sequence[str]) -> list[str]:
        """The names validation scores under, from data.valid's `directions` ("" for a bilingual run's one
        set): those, or with train.valid_augment each one's set as given and its modified copy."""
        if not self.valid_augment.active:
            return list(directions)
        return [name for d in directions for name in (d or GIVEN, augmented_name(d))]

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

    def _shape_rules(self, sequence_targets: bool) -> list[Rule]:
        """Fixed batch shapes: a length multiple no batch outgrows, for models whose targets are sequences."""
        return [
            (
                not 0 <= self.shape_multiple <= self.max_tokens,
                "train.shape_multiple: must be in [0, train.max_tokens] (0: each batch as long as its "
                "longest pair)",
            ),
            (
                bool(self.shape_multiple) and not sequence_targets,
                "train.shape_multiple: a classifier's target is one label, not a sequence to pad: leave "
                "shape_multiple out",
            ),
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
                self.valid_augment.noise > 0,
                "train.valid_augment.noise: must be 0 (a random string scores nothing worth choosing by)",
            ),
            (
                self.valid_augment.subword > 0,
                "train.valid_augment.subword: must be 0 (the copy is text, encoded one way like the set; "
                "sampled segmentations are training's)",
            ),
            (
                bool(self.best_direction) and self.best_direction not in directions,
                f"train.best_direction: {self.best_direction!r} is not a validated direction "
                f"({', '.join(d for d in directions if d) or 'none: a bilingual run has one'})",
            ),
            (
                not _valid_device(self.device),
                f"train.device: {self.device!r} is not one of auto, cpu, cuda, cuda:N",
            ),
            *_bleu_tokenizer_rules(self.valid_bleu_tokenize),
        ]


def augmented_name(direction: str) -> str:
    """What the modified copy of the validation set of `direction` ("" for a bilingual run's) is
    scored under: `augmented`, `de-en+augmented`."""
    return f"{direction}+augmented" if direction else "augmented"


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
