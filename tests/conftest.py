"""Shared fixtures: a tiny synthetic parallel corpus, its config, and a tiny model."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.config import ModelConfig, config_from_dict
from seq2seq.models.build import build_model

ROOT = Path(__file__).resolve().parents[1]  # the repository

WORDS = "red blue green cat dog bird runs sleeps eats big small the a on under house tree".split()


def write_corpus(directory: Path, name: str, count: int, seed: int) -> tuple[Path, Path]:
    """Source: random words; target: the same words reversed and upper-cased (learnable, not trivial)."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 7))]
        src.append(" ".join(words))
        tgt.append(" ".join(w.upper() for w in reversed(words)))
    src_path, tgt_path = directory / f"{name}.src", directory / f"{name}.tgt"
    src_path.write_text("\n".join(src) + "\n", encoding="utf-8")
    tgt_path.write_text("\n".join(tgt) + "\n", encoding="utf-8")
    return src_path, tgt_path


def tiny_config_dict(tmp_path: Path, **train: object) -> dict:
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    train_src, train_tgt = write_corpus(data_dir, "train", 400, seed=1)
    valid_src, valid_tgt = write_corpus(data_dir, "valid", 20, seed=2)
    return {
        "run_dir": str(tmp_path / "run"),
        "data": {
            "train_src": str(train_src),
            "train_tgt": str(train_tgt),
            "valid_src": str(valid_src),
            "valid_tgt": str(valid_tgt),
            "max_len": 32,
        },
        "tokenizer": {"vocab_size": 60},
        "model": {
            "d_model": 32,
            "heads": 2,
            "ffn_dim": 64,
            "encoder_layers": 1,
            "decoder_layers": 1,
            "dropout": 0.1,
            "max_positions": 64,
        },
        "train": {
            "max_tokens": 256,
            "lr": 3e-3,
            "warmup_steps": 10,
            "max_steps": 12,
            "log_every": 1,
            "valid_every": 6,
            "valid_subset": 8,
            "num_threads": 1,
            "precision": "fp32",  # `auto` times the CPU; tests compare runs, so pin it
            **train,
        },
        "decode": {"beam": 2, "max_tokens": 200},
    }


def train_tiny_run(directory: Path, **train: object) -> tuple[Path, Path]:
    """Write the tiny config into `directory`, train it through the CLI; returns (config, run dir)."""
    from typer.testing import CliRunner

    from seq2seq.cli import app

    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(directory, **train)), encoding="utf-8")
    result = CliRunner().invoke(app, ["train", str(config)])
    assert result.exit_code == 0, result.output
    return config, directory / "run"


@pytest.fixture
def tiny_config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    return path


@pytest.fixture
def tiny_config(tmp_path: Path):
    return config_from_dict(tiny_config_dict(tmp_path))


def make_model(seed: int = 0, vocab: int = 23, **overrides: object):
    """A small random model in eval mode (no dropout), for property tests."""
    torch.manual_seed(seed)
    cfg = ModelConfig(
        **{
            "d_model": 32,
            "heads": 4,
            "ffn_dim": 64,
            "encoder_layers": 2,
            "decoder_layers": 2,
            "max_positions": 64,
            **overrides,
        }
    )
    return build_model(cfg, vocab, vocab).eval()


def random_ids(rows: int, length: int, vocab: int = 23, seed: int = 0) -> torch.Tensor:
    """(rows, length) ids drawn from the non-special range [4, vocab)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, vocab, (rows, length), generator=g)


@pytest.fixture(scope="session")
def served_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny trained run for the server tests (API and browser), trained once per session."""
    return train_tiny_run(tmp_path_factory.mktemp("served"), max_steps=40, valid_every=20)[1]
