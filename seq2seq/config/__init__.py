"""Typed, frozen configuration loaded strictly from YAML, with `--set a.b=v` overrides.

Every section is a frozen dataclass in the module named after it (`data`, `tokenizer`, `model`,
`train`, `decode`), with its value rules beside its fields; `schema` holds the root `Config`,
`loading` the strict loader, and `task` the tasks a model can do (`Task`). Loading refuses unknown
keys (naming the dotted path and the closest valid key), wrong types and impossible values, and
reports every problem at once.
"""

from seq2seq.config.data import DataConfig
from seq2seq.config.decode import DecodeConfig
from seq2seq.config.loading import (
    apply_override,
    config_differences,
    config_from_dict,
    config_to_dict,
    load_config,
    save_config,
)
from seq2seq.config.model import ModelConfig
from seq2seq.config.schema import Config, check_data_files, data_files
from seq2seq.config.task import Task
from seq2seq.config.tokenizer import TokenizerConfig
from seq2seq.config.train import TrainConfig

__all__ = [
    "Config",
    "DataConfig",
    "DecodeConfig",
    "ModelConfig",
    "Task",
    "TokenizerConfig",
    "TrainConfig",
    "apply_override",
    "check_data_files",
    "config_differences",
    "config_from_dict",
    "config_to_dict",
    "data_files",
    "load_config",
    "save_config",
]
