"""Typed, frozen configuration loaded strictly from YAML, with `--set a.b=v` overrides.

Every section is a frozen dataclass. Loading refuses unknown keys (naming the dotted path and the
closest valid key), wrong types and impossible values, and reports every problem at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from seq2seq.errors import ConfigError


@dataclass(frozen=True)
class DataConfig:
    """Parallel text files (one sentence per line), the training length filter, the prepared corpus.

    `train_src`/`train_tgt` take one file or a list (corpora concatenated in order, the i-th source
    file aligned with the i-th target file).
    """

    train_src: tuple[str, ...] = ()
    train_tgt: tuple[str, ...] = ()
    valid_src: str = ""
    valid_tgt: str = ""
    max_len: int = 256  # max subword tokens per side; longer training pairs are dropped
    max_len_ratio: float = 3.0  # drop training pairs whose token-length ratio exceeds this (0 = off)
    prepared_dir: str = ""  # where `s2s prepare` keeps the token arrays ("" = RUN_DIR/prepared)


@dataclass(frozen=True)
class TokenizerConfig:
    """SentencePiece model trained on the training corpus and stored in the run directory."""

    type: Literal["bpe", "unigram"] = "bpe"
    vocab_size: int = 8000
    joint: bool = True  # one vocabulary for source and target
    character_coverage: float = 1.0
    split_digits: bool = False
    byte_fallback: bool = False  # unknown characters become UTF-8 byte pieces instead of <unk>
    max_sentences: int = 2_000_000  # sentences sampled for training the tokenizer


@dataclass(frozen=True)
class ModelConfig:
    """Transformer family, sizes and regularization."""

    arch: Literal["encoder_decoder", "decoder_only", "encoder_only"] = "encoder_decoder"
    task: Literal["translate", "classify", "tag"] = "translate"  # classify, tag: encoder_only readers
    prefix_lm: bool = False  # decoder_only: source positions see the whole source (not only the past)
    pooling: Literal["cls", "mean"] = "cls"  # classify: read the <cls> state, or the mean of the tokens
    d_model: int = 256
    heads: int = 4
    ffn_dim: int = 1024
    encoder_layers: int = 3
    decoder_layers: int = 3
    dropout: float = 0.1  # residual and embedding dropout
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    norm: Literal["pre", "post"] = "pre"
    max_positions: int = 1024
    share_all_embeddings: bool = True  # source = target embedding = output (needs a joint vocabulary)
    tie_output: bool = True  # target embedding = output projection


@dataclass(frozen=True)
class TrainConfig:
    """Optimization, batching, checkpointing and validation."""

    seed: int = 1
    init_from: str = ""  # fine-tune: start from this run directory's weights (or this checkpoint file)
    init_checkpoint: str = "best"  # which checkpoint of the init_from run directory
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
    patience: int = 0  # stop after this many validations without improvement (0 = never)
    valid_bleu: bool = True  # decode the validation set and compute BLEU at each validation
    valid_bleu_tokenize: str = (
        "13a"  # sacreBLEU tokenizer for validation BLEU: 13a, intl, zh, ja-mecab, char...
    )
    valid_beam: int = 1
    valid_subset: int = 0  # decode only the first N validation sentences for BLEU (0 = all)
    valid_samples: int = 3  # sample translations written to the log at each validation
    ema_decay: float = 0.0  # exponential moving average of weights, used for validation and saving
    num_threads: int = 0  # CPU threads for torch (0 = torch's default)
    compile: bool = False  # torch.compile the model
    tensorboard: bool = False  # also write the metrics as TensorBoard curves to RUN_DIR/tensorboard/


@dataclass(frozen=True)
class DecodeConfig:
    """Defaults for `s2s translate` and `s2s evaluate` (each can be overridden on the command line)."""

    beam: int = 5
    length_penalty: float = 1.0  # GNMT alpha; 0 = plain sum of log-probabilities
    max_len_a: float = 1.5  # max output length = a * source length + b
    max_len_b: int = 10
    min_len: int = 1
    no_repeat_ngram: int = 0  # never repeat an n-gram of this size in one translation (0 = off)
    max_tokens: int = 4000  # source tokens per decoding batch


@dataclass(frozen=True)
class Config:
    """One training run: where it lives and how every stage is configured."""

    run_dir: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read a YAML config, apply `a.b=value` overrides, and validate everything at once."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        raw = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError as e:
        line = path.read_bytes().count(b"\n", 0, e.start) + 1
        raise ConfigError(f"{path}: line {line} is not valid UTF-8 (save the config as UTF-8)") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    for item in overrides or []:
        apply_override(raw, item)
    return config_from_dict(raw)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Set `section.key=value` in a raw config dict; the value is parsed as YAML, then type-checked."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like section.key=value")
    dotted, value = item.split("=", 1)
    *parents, leaf = dotted.strip().split(".")
    node = raw
    for name in parents:
        node = node.setdefault(name, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {item!r}: {name} is not a section")
    try:
        node[leaf] = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        raise ConfigError(f"override {item!r}: the value is not valid YAML") from None


def config_from_dict(raw: dict[str, Any]) -> Config:
    """Build a `Config` from plain data, raising one `ConfigError` that lists every problem."""
    errors: list[str] = []
    cfg = _build(Config, raw, "", errors)
    if not errors:
        errors.extend(_check_values(cfg))
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    return cfg


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """Plain nested dict, suitable for YAML and for checkpoints: one file is a string, several a list."""
    return dataclasses.asdict(cfg, dict_factory=lambda items: {k: _plain(v) for k, v in items})


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return value[0] if len(value) == 1 else list(value)
    return value


def config_differences(
    old: dict[str, Any], new: dict[str, Any], sections: Sequence[str]
) -> list[tuple[str, Any, Any]]:
    """(dotted key, old value, new value) for each key of `sections` whose value differs.

    A key `old` lacks (written before the key existed) counts as unchanged.
    """
    return [
        (f"{section}.{key}", old.get(section, {}).get(key, value), value)
        for section in sections
        for key, value in new[section].items()
        if old.get(section, {}).get(key, value) != value
    ]


def save_config(cfg: Config, path: Path) -> None:
    from seq2seq.files import write_text

    write_text(path, yaml.safe_dump(config_to_dict(cfg), sort_keys=False))


def check_data_files(cfg: Config) -> None:
    """Every data file named in the config exists (only training needs them)."""
    missing = [
        f"data.{name}: file not found: {path}"
        for name, path in data_files(cfg).items()
        if not Path(path).is_file()
    ]
    if missing:
        raise ConfigError("invalid config:\n  " + "\n  ".join(missing))


def data_files(cfg: Config) -> dict[str, str]:
    """Every text file the data section names, keyed by its key (`train_src`, `train_src.1`, ...).

    The first file of a list has the plain key, so a run with one training file keeps its names.
    """
    files = {}
    for key in ("train_src", "train_tgt"):
        for i, path in enumerate(getattr(cfg.data, key)):
            files[f"{key}.{i}" if i else key] = path
    return files | {"valid_src": cfg.data.valid_src, "valid_tgt": cfg.data.valid_tgt}


def _build(cls: type, raw: Any, prefix: str, errors: list[str]) -> Any:
    if not isinstance(raw, dict):
        errors.append(f"{prefix.rstrip('.') or 'config'}: expected a mapping, got {type(raw).__name__}")
        return cls()
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else f" (valid keys: {', '.join(names)})"
            errors.append(f"{prefix}{key}: unknown key{hint}")
    values = {}
    for name in names:
        if name not in raw:
            continue
        kind = hints[name]
        if dataclasses.is_dataclass(kind):
            values[name] = _build(kind, raw[name], f"{prefix}{name}.", errors)
        else:
            values[name] = _coerce(raw[name], kind, f"{prefix}{name}", errors)
    return cls(**values)


MAX_INT = 2**31  # every integer setting fits a C int (SentencePiece, torch)


def _coerce(value: Any, kind: Any, key: str, errors: list[str]) -> Any:
    origin = typing.get_origin(kind)
    if origin is Literal:
        choices = typing.get_args(kind)
        if value not in choices:
            errors.append(f"{key}: {value!r} is not one of {', '.join(map(str, choices))}")
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= MAX_INT:
                errors.append(f"{key}: {value} is out of range (|value| < {MAX_INT})")
            return value
    elif kind is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):  # YAML 1.1 reads `3e-4` (no dot) as a string
            with contextlib.suppress(ValueError):
                number = float(value)
        if number is not None:
            if not math.isfinite(number):
                errors.append(f"{key}: must be a finite number, got {value!r}")
            return number
    elif kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif kind == tuple[str, ...]:  # one file or a list of files
        items = value if isinstance(value, list) else [value]
        if items and all(isinstance(v, str) and v for v in items):
            return tuple(items)
        errors.append(f"{key}: expected a file name or a non-empty list of file names, got {value!r}")
        return ()
    name = getattr(kind, "__name__", str(kind))
    errors.append(f"{key}: expected {name}, got {type(value).__name__} {value!r}")
    return value


def _check_values(cfg: Config) -> list[str]:
    m, t, d, tok = cfg.model, cfg.train, cfg.decode, cfg.tokenizer
    rules = [
        (not cfg.run_dir, "run_dir: required (the directory this run writes to)"),
        (not cfg.data.train_src, "data.train_src: required"),
        (not cfg.data.train_tgt, "data.train_tgt: required"),
        (
            len(cfg.data.train_src) != len(cfg.data.train_tgt),
            f"data.train_tgt: {len(cfg.data.train_tgt)} file(s) but data.train_src has "
            f"{len(cfg.data.train_src)}: list the target file of each source file, in the same order",
        ),
        (not cfg.data.valid_src, "data.valid_src: required"),
        (not cfg.data.valid_tgt, "data.valid_tgt: required"),
        (cfg.data.max_len < 1, "data.max_len: must be >= 1"),
        (cfg.data.max_len_ratio < 0, "data.max_len_ratio: must be >= 0"),
        (not 8 <= tok.vocab_size <= 1_000_000, "tokenizer.vocab_size: must be in [8, 1000000]"),
        (
            tok.byte_fallback and tok.vocab_size <= 260,
            "tokenizer.vocab_size: byte_fallback needs more than 260 (256 byte pieces, 4 special ids, "
            "and the corpus' characters)",
        ),
        (
            not 0.98 <= tok.character_coverage <= 1,
            "tokenizer.character_coverage: must be in [0.98, 1] (SentencePiece's range)",
        ),
        (
            m.d_model % max(m.heads, 1) != 0 or m.heads < 1,
            f"model.d_model: {m.d_model} is not divisible by model.heads={m.heads}",
        ),
        ((m.d_model // max(m.heads, 1)) % 2 != 0, "model.d_model: d_model / heads must be even"),
        (m.d_model % 2 != 0, "model.d_model: must be even (sinusoidal positions)"),
        (m.encoder_layers < 1, "model.encoder_layers: must be >= 1"),
        *_decoder_only_problems(cfg),
        *_reader_problems(cfg),
        (m.decoder_layers < 1, "model.decoder_layers: must be >= 1"),
        (m.ffn_dim < 1, "model.ffn_dim: must be >= 1"),
        (m.max_positions < cfg.data.max_len + 2, "model.max_positions: must be >= data.max_len + 2"),
        (m.max_positions > 65536, "model.max_positions: must be <= 65536"),
        (
            m.share_all_embeddings and not tok.joint,
            "model.share_all_embeddings: needs tokenizer.joint: true (separate vocabularies cannot share)",
        ),
        *[
            (not 0 <= p < 1, f"model.{n}: must be in [0, 1)")
            for n, p in [
                ("dropout", m.dropout),
                ("attention_dropout", m.attention_dropout),
                ("activation_dropout", m.activation_dropout),
            ]
        ],
        (t.max_tokens < 1, "train.max_tokens: must be >= 1"),
        (t.accum_steps < 1, "train.accum_steps: must be >= 1"),
        (not 0 <= t.seed < 2**31, "train.seed: must be in [0, 2147483647]"),
        (t.lr <= 0, "train.lr: must be > 0"),
        (t.weight_decay < 0, "train.weight_decay: must be >= 0"),
        (t.warmup_steps < 0, "train.warmup_steps: must be >= 0"),
        (
            t.schedule == "inverse_sqrt" and t.warmup_steps == 0,
            "train.warmup_steps: inverse_sqrt decays as sqrt(warmup_steps / step), so it needs >= 1 "
            "(for no warm-up at all choose train.schedule: constant, linear or cosine)",
        ),
        (
            t.schedule in ("linear", "cosine") and t.max_steps <= t.warmup_steps,
            f"train.max_steps: the {t.schedule} schedule decays until max_steps, which must be set "
            "and larger than train.warmup_steps",
        ),
        (not 0 <= t.min_lr <= t.lr, "train.min_lr: must be in [0, train.lr]"),
        (t.clip_norm < 0, "train.clip_norm: must be >= 0"),
        (not 0 <= t.label_smoothing < 1, "train.label_smoothing: must be in [0, 1)"),
        (t.max_steps < 0, "train.max_steps: must be >= 0"),
        (t.max_epochs < 0, "train.max_epochs: must be >= 0"),
        (t.max_minutes < 0, "train.max_minutes: must be >= 0"),
        (
            t.max_steps == 0 and t.max_epochs == 0 and t.max_minutes == 0,
            "train.max_steps: set train.max_steps, train.max_epochs or train.max_minutes",
        ),
        (t.log_every < 1, "train.log_every: must be >= 1"),
        (t.valid_every < 1, "train.valid_every: must be >= 1"),
        (t.keep_checkpoints < 0, "train.keep_checkpoints: must be >= 0"),
        (t.patience < 0, "train.patience: must be >= 0"),
        (t.valid_beam < 1, "train.valid_beam: must be >= 1"),
        (t.valid_subset < 0, "train.valid_subset: must be >= 0"),
        (t.valid_samples < 0, "train.valid_samples: must be >= 0"),
        (not 0 <= t.num_threads <= 1024, "train.num_threads: must be in [0, 1024]"),
        (tok.max_sentences < 1, "tokenizer.max_sentences: must be >= 1"),
        (
            t.best_metric == "bleu" and not t.valid_bleu,
            "train.best_metric: 'bleu' needs train.valid_bleu: true",
        ),
        (not 0 <= t.ema_decay < 1, "train.ema_decay: must be in [0, 1)"),
        (not _valid_device(t.device), f"train.device: {t.device!r} is not one of auto, cpu, cuda, cuda:N"),
        *_check_bleu_tokenizer(t.valid_bleu_tokenize),
        (d.beam < 1, "decode.beam: must be >= 1"),
        (d.length_penalty < 0, "decode.length_penalty: must be >= 0"),
        (d.max_len_a < 0 or d.max_len_b < 0, "decode.max_len_a: max_len_a and max_len_b must be >= 0"),
        (
            not 0 <= d.min_len < m.max_positions - 1,
            "decode.min_len: must be >= 0 and < model.max_positions - 1",
        ),
        (d.max_tokens < 1, "decode.max_tokens: must be >= 1"),
        (d.no_repeat_ngram < 0, "decode.no_repeat_ngram: must be >= 0"),
    ]
    return [message for broken, message in rules if broken]


def _decoder_only_problems(cfg: Config) -> list[tuple[bool, str]]:
    """A decoder-only model reads source and target as one sequence of one vocabulary."""
    m = cfg.model
    if m.arch != "decoder_only":
        return [(m.prefix_lm, "model.prefix_lm: only for model.arch: decoder_only")]
    longest = 2 * (cfg.data.max_len + 2)
    return [
        (not cfg.tokenizer.joint, "model.arch: decoder_only needs tokenizer.joint: true (one vocabulary)"),
        (
            m.max_positions < longest,
            f"model.max_positions: a decoder-only model holds source and target: must be >= {longest} "
            "(2 x (data.max_len + 2))",
        ),
    ]


def _reader_problems(cfg: Config) -> list[tuple[bool, str]]:
    """Translation is for the writing families; classify and tag for the encoder-only reader."""
    m, best = cfg.model, cfg.train.best_metric
    reads = m.task != "translate"
    return [
        (
            reads != (m.arch == "encoder_only"),
            f"model.task: {m.task} with model.arch: {m.arch}; an encoder_only model classifies or tags "
            "(task: classify | tag), the other families translate (task: translate)",
        ),
        (reads and not cfg.tokenizer.joint, f"model.task: {m.task} needs tokenizer.joint: true"),
        (
            reads and best == "bleu",
            f"train.best_metric: bleu scores translations; for task {m.task} use accuracy or loss",
        ),
        (not reads and best == "accuracy", "train.best_metric: accuracy is for task: classify or tag"),
        (m.pooling != "cls" and m.task != "classify", "model.pooling: only for task: classify"),
    ]


def _check_bleu_tokenizer(name: str) -> list[tuple[bool, str]]:
    """sacreBLEU knows the tokenizer and has what it needs (some need an extra package)."""
    from sacrebleu.metrics import BLEU

    if name not in BLEU.TOKENIZERS:
        return [(True, f"train.valid_bleu_tokenize: {name!r} is not one of {', '.join(BLEU.TOKENIZERS)}")]
    try:
        BLEU(tokenize=name)
    except ImportError as e:
        return [(True, f"train.valid_bleu_tokenize: {name} needs an extra package: {e}")]
    return []


def _valid_device(device: str) -> bool:
    return device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit())
