"""The root of the schema: one `Config` of six parts, and the rules that read them together."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seq2seq.config.data import DataConfig
from seq2seq.config.decode import DecodeConfig
from seq2seq.config.model import ModelConfig
from seq2seq.config.tokenizer import TokenizerConfig
from seq2seq.config.train import TrainConfig
from seq2seq.errors import ConfigError


@dataclass(frozen=True)
class Config:
    """One training run: where it lives and how every stage is configured."""

    # required: the directory the run writes to (config, tokenizer, checkpoints, log, metrics)
    run_dir: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    def problems(self) -> list[str]:
        """Every broken value rule, section by section in the order above.

        A rule that reads two sections sits with the section whose key it names, which gets the other
        section's fact as a value (the model's family rules need data.max_len, tokenizer.joint and
        train.best_metric; decode.min_len needs model.max_positions; train.best_direction the
        directions of data.valid; train.guided_alignment model.arch, model.decoder_layers and
        model.right_to_left).
        """
        return [
            *(["run_dir: required (the directory this run writes to)"] if not self.run_dir else []),
            *self.data.problems(control_tokens=self.tokenizer.control_tokens, task=self.model.task),
            *self.tokenizer.problems(),
            *self.model.problems(
                max_len=self.data.max_len,
                joint_vocab=self.tokenizer.joint,
                best_metric=self.train.best_metric,
                vocab_size=self.tokenizer.vocab_size,
            ),
            *self.train.problems(
                directions=[v.direction for v in self.data.validation_sets()],
                arch=self.model.arch,
                decoder_layers=self.model.decoder_layers,
                sequence_targets=self.model.task.sequence_targets,
                right_to_left=self.model.right_to_left,
            ),
            *self.decode.problems(max_positions=self.model.max_positions),
        ]


def data_files(cfg: Config) -> dict[str, str]:
    """Every text file the data section names, keyed by its key (`train_src`, `train_src.1`, ...,
    or `corpora.NAME.src`; `DataConfig.corpus_keys`), the training files first.

    The first file of a list has the plain key, so a run with one training file keeps its names.
    """
    files = {
        key: corpus.files()[role]
        for corpus, keys in zip(cfg.data.training_corpora(), cfg.data.corpus_keys(), strict=True)
        for role, key in keys.items()
    }
    for valid in cfg.data.validation_sets():  # a multilingual run's by direction: valid_src.de-en
        suffix = f".{valid.direction}" if valid.direction else ""
        files |= {f"valid_src{suffix}": valid.src, f"valid_tgt{suffix}": valid.tgt}
    return files


def is_training_file(key: str) -> bool:
    """Whether a `data_files` key names a training file (a prepared corpus depends on those only)."""
    return not key.startswith("valid_")


def check_data_files(cfg: Config) -> None:
    """Every data file named in the config exists (only training needs them)."""
    missing = [
        f"data.{name}: file not found: {path}"
        for name, path in data_files(cfg).items()
        if not Path(path).is_file()
    ]
    if missing:
        raise ConfigError("invalid config:\n  " + "\n  ".join(missing))
