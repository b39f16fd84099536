"""Shared fixtures: a tiny synthetic parallel corpus, its config, a tiny model, and the trained runs
that a session shares (`trained_run`, each kind trained once; `quickstart_pipeline`, run once)."""

from __future__ import annotations

import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.config import ModelConfig, config_from_dict
from seq2seq.models.build import build_model
from tests.helpers import ROOT, run_cli

__all__ = [
    "ROOT",
    "WORDS",
    "make_model",
    "random_ids",
    "tiny_config_dict",
    "train_tiny_run",
    "write_corpus",
    "write_reader_corpus",
]

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


ANIMALS = {"cat", "dog", "bird"}


def write_reader_corpus(directory: Path, task: str, name: str, count: int, seed: int) -> tuple[Path, Path]:
    """Source: random words; target: a reader's, `classify` whether the first word is an animal,
    `tag` one tag per word (B-ANIMAL for an animal, O for the others)."""
    src_path, tgt_path = write_corpus(directory, name, count, seed)
    sources = src_path.read_text(encoding="utf-8").splitlines()
    if task == "classify":
        labels = ["animal" if line.split()[0] in ANIMALS else "other" for line in sources]
    else:
        labels = [" ".join("B-ANIMAL" if w in ANIMALS else "O" for w in line.split()) for line in sources]
    tgt_path.write_text("\n".join(labels) + "\n", encoding="utf-8")
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
            "precision": "fp32",  # `auto` is bf16 on some CPUs; tests compare runs, so pin it
            **train,
        },
        "decode": {"beam": 2, "max_tokens": 200},
    }


def train_tiny_run(directory: Path, **train: object) -> tuple[Path, Path]:
    """Write the tiny config into `directory`, train it through the CLI; returns (config, run dir).
    For a test that needs a run of its own; a run it only reads is `trained_run(kind)`."""
    run = train_run(directory, {"train": train})
    return run.config, run.run


def train_run(
    directory: Path, changes: dict[str, dict[str, object]], drop: tuple[str, ...] = (), shared: bool = False
) -> TrainedRun:
    """The tiny config with `changes` (section -> keys to set) and without the data keys `drop`,
    written into `directory` and trained. `shared`: a run of the session's (`trained_run`), which the
    unit tests may read though they train nothing of their own (tests/unit/conftest.py)."""
    raw = tiny_config_dict(directory, **changes.get("train", {}))
    for key in drop:
        del raw["data"][key]
    if (task := changes.get("model", {}).get("task")) in ("classify", "tag"):  # a reader's targets
        for split, count, seed in (("train", 400, 1), ("valid", 20, 2)):
            write_reader_corpus(directory / "data", str(task), split, count, seed)
    for section, values in changes.items():
        raw[section] |= values
    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    SHARED_TRAINING[0] = shared
    try:
        result = run_cli("train", str(config))
    finally:
        SHARED_TRAINING[0] = False
    assert result.exit_code == 0, result.output
    return TrainedRun(config, directory / "run", directory / "data")


SHARED_TRAINING = [False]  # True while a run of the session's trains


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: its config file, its run directory, and the folder of the corpus it was trained
    on (train.src/.tgt, valid.src/.tgt). A shared one is read-only: a test that changes a run takes
    `run_copy`."""

    config: Path
    run: Path
    data: Path


# The kinds of shared run: the tiny config with these changes (section -> keys), and what each is for.
RUNS: dict[str, dict[str, dict[str, object]]] = {
    # the CLI and safety promises, fine-tuning, ensembles: step_6.pt and step_12.pt
    "tiny": {"train": {"max_steps": 12, "valid_every": 6}},
    # a model with fewer layers started from this one's (train.init_from; tests/integration/test_shrink.py)
    "deep": {
        "train": {"max_steps": 6, "valid_every": 6},
        "model": {"encoder_layers": 3, "decoder_layers": 3},
    },
    # the server, its API and its page
    "served": {"train": {"max_steps": 40, "valid_every": 20}},
    # the HTML report: long enough for non-empty translations to draw attention for
    "report": {"train": {"max_steps": 120, "valid_every": 40}, "decode": {"min_len": 2}},
    # CTranslate2 export: greedy choices with clear margins, so both engines agree
    "confident": {"train": {"max_steps": 150, "lr": 1e-2, "valid_every": 150}},
    # a right-to-left model: it reranks the tiny run's beam (tests/unit/translate/test_right_to_left.py)
    "right_to_left": {
        "train": {"max_steps": 150, "lr": 1e-2, "valid_every": 150},  # as "confident": it writes words
        "model": {"right_to_left": True},
    },
    # the decoder-only family through the CLI (a prefix LM)
    "decoder_only": {
        "train": {"max_steps": 30, "valid_every": 15},
        "model": {"arch": "decoder_only", "prefix_lm": True, "max_positions": 72},
    },
    # the encoder-only readers through the CLI (`write_reader_corpus`)
    "classify": {
        "train": {"max_steps": 12, "valid_every": 6, "best_metric": "accuracy", "label_smoothing": 0.0},
        "model": {"arch": "encoder_only", "task": "classify"},
    },
    "tag": {
        "train": {"max_steps": 12, "valid_every": 6, "best_metric": "accuracy", "label_smoothing": 0.0},
        "model": {"arch": "encoder_only", "task": "tag"},
    },
}


def pytest_configure(config: pytest.Config) -> None:
    """One of several test processes (`pytest -n N`) computes on one thread, and so do its children:
    N processes on N cores, none oversubscribed. Each process (and its children) keeps its CTranslate2
    export cache in a temporary directory of its own, never the user's."""
    cache = tempfile.mkdtemp(prefix="s2s-test-cache-")
    os.environ["S2S_CACHE_DIR"] = cache
    atexit.register(shutil.rmtree, cache, True)
    if "PYTEST_XDIST_WORKER" in os.environ:
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], TrainedRun]:
    """`trained_run(kind)`: the shared run of that kind (a key of RUNS), trained on first use and
    then reused by every test of the session."""
    done: dict[str, TrainedRun] = {}

    def get(kind: str) -> TrainedRun:
        if kind not in done:
            done[kind] = train_run(tmp_path_factory.mktemp(kind), RUNS[kind], shared=True)
        return done[kind]

    return get


@pytest.fixture(scope="session")
def multilingual_run(tmp_path_factory: pytest.TempPathFactory) -> TrainedRun:
    """A tiny run of two directions on the tiny corpus: `de` for its sources, `en` for its targets
    (the words reversed and upper-cased), each direction validated on its own."""
    directory = tmp_path_factory.mktemp("multilingual")
    data = directory / "data"
    tiny_config_dict(directory)  # writes the tiny corpus into `data`
    one_way = {"src_lang": "de", "tgt_lang": "en"}
    other_way = {"src_lang": "en", "tgt_lang": "de"}
    changes: dict[str, dict[str, object]] = {
        "data": {
            "corpora": [
                {"name": "de_en", "src": str(data / "train.src"), "tgt": str(data / "train.tgt"), **one_way},
                {
                    "name": "en_de",
                    "src": str(data / "train.tgt"),
                    "tgt": str(data / "train.src"),
                    **other_way,
                },
            ],
            "valid": [
                {"src": str(data / "valid.src"), "tgt": str(data / "valid.tgt"), **one_way},
                {"src": str(data / "valid.tgt"), "tgt": str(data / "valid.src"), **other_way},
            ],
            "temperature": 2.0,
        },
        "train": {"max_steps": 12, "valid_every": 6, "best_metric": "bleu"},
    }
    drop = ("train_src", "train_tgt", "valid_src", "valid_tgt")
    return train_run(directory, changes, drop=drop, shared=True)


@pytest.fixture
def tiny_run(trained_run: Callable[[str], TrainedRun]) -> TrainedRun:
    """The shared "tiny" run (read-only)."""
    return trained_run("tiny")


@pytest.fixture
def run_copy(tiny_run: TrainedRun, tmp_path: Path) -> TrainedRun:
    """A private copy of the tiny run, for a test that changes or damages it, with a config naming it."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run.run, copy)
    raw = yaml.safe_load(tiny_run.config.read_text())
    raw["run_dir"] = str(copy)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return TrainedRun(config, copy, tiny_run.data)


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
def served_run(trained_run: Callable[[str], TrainedRun]) -> Path:
    """The run directory the server tests (API and browser) serve."""
    return trained_run("served").run


@dataclass(frozen=True)
class PipelineRun:
    """The quickstart pipeline example run to its end: the directory it ran in (its data, the example
    and its base config where the example names them), the example, its workspace, and what it
    printed and wrote as the final table then."""

    directory: Path
    file: Path
    workspace: Path
    stderr: str
    table: dict


def pipeline_env() -> dict[str, str]:
    """The environment `s2s pipeline` runs in as a process: one thread, this checkout's s2s."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.fixture(scope="session")
def quickstart_pipeline(tmp_path_factory: pytest.TempPathFactory) -> PipelineRun:
    """examples/quickstart_pipeline.yaml on the quickstart data, run once per session as a user runs
    it (`s2s pipeline`, a process): every kind of step, about a minute on one core. Its tests share it
    (tests/system/test_pipeline.py, one xdist group); one that changes it leaves it whole again."""
    directory = tmp_path_factory.mktemp("pipeline")
    env = pipeline_env()
    data = [sys.executable, str(ROOT / "tools" / "make_quickstart_data.py"), "--out", "data/quickstart"]
    subprocess.run(data, cwd=directory, env=env, check=True, capture_output=True)
    for name in ("examples/quickstart_pipeline.yaml", "configs/quickstart.yaml"):
        (directory / name).parent.mkdir(exist_ok=True)
        shutil.copyfile(ROOT / name, directory / name)
    file = directory / "examples" / "quickstart_pipeline.yaml"
    command = [sys.executable, "-m", "seq2seq", "pipeline", str(file.relative_to(directory))]
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-5000:]
    workspace = directory / yaml.safe_load(file.read_text(encoding="utf-8"))["workspace"]
    table = json.loads((workspace / "table.json").read_text(encoding="utf-8"))
    return PipelineRun(directory, file, workspace, done.stderr, table)
