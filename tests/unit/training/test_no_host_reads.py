"""Training steps never wait for the device: between two log lines nothing reads a tensor's value
back to Python (what would make the host wait for a GPU), and a log line reads the interval's sums
back once. On the CPU the reads are counted where they happen (`Tensor.item`, `tolist`, `float()`,
...), so a change that adds one to a step fails here, without a GPU; on a GPU the same steps run
under CUDA's own sync check (tests/system/test_cuda_sync.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from seq2seq.config import config_from_dict
from seq2seq.data.parallel import Batch, ParallelData
from seq2seq.data.tokenizer import train_or_load_tokenizers
from seq2seq.models.build import build_model
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.trainer import Trainer
from seq2seq.training.validation import ValidSet
from tests.conftest import tiny_config_dict

# the ways a tensor's value reaches Python (each waits for the device that holds it)
READS = ("item", "tolist", "__float__", "__int__", "__bool__", "__index__", "cpu", "numpy")
LINES = ["red cat runs", "the big dog", "a small bird sings", "blue cat", "the dog sleeps under a tree"]
SETTINGS = [{}, {"accum_steps": 2, "clip_norm": 0.5, "label_smoothing": 0.2}, {"ema_decay": 0.99}]
SETTING_NAMES = ["defaults", "accumulated and clipped", "weight average"]


def stepping(
    tmp_path: Path, device: torch.device, steps: int = 4, **train: object
) -> tuple[Trainer, Callable[[], None], int]:
    """A trainer of the tiny config on `device`, and a function that takes its next `steps` steps as
    `Trainer.fit` does between two log lines (their batches built beforehand, on the host), with the
    target tokens they count."""
    cfg = config_from_dict(tiny_config_dict(tmp_path, max_tokens=64, **train))
    toks = train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    data = ParallelData.from_lists(toks.src.encode(LINES * 4), toks.tgt.encode(LINES[::-1] * 4))
    trainer = Trainer(
        cfg, RunDir(tmp_path / "run"), model, toks, {}, data, [ValidSet(data, [], [])], DistInfo(), device
    )
    planned = [trainer.order.next_step(trainer.progress) for _ in range(steps)]
    groups: list[list[Batch]] = [step.build(data) for step in planned]
    if device.type == "cuda":
        groups = [[b.pin_memory() for b in group] for group in groups]
    tokens = [sum(b.num_tgt_tokens for b in group) for group in groups]  # read from the host's batches

    def run() -> None:
        for step, group, counted in zip(planned, groups, tokens, strict=True):
            trainer._count(trainer.train_step(group, step.total_tokens), counted)

    return trainer, run, sum(tokens)


def counting(counts: Counter, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return original(self, *args, **kwargs)

    return read


@pytest.mark.parametrize("train", SETTINGS, ids=SETTING_NAMES)
def test_steps_read_nothing_back_and_a_log_line_reads_once(tmp_path, monkeypatch, train):
    trainer, run, tokens = stepping(tmp_path, torch.device("cpu"), **train)
    counts: Counter = Counter()
    for name in READS:
        monkeypatch.setattr(torch.Tensor, name, counting(counts, name, getattr(torch.Tensor, name)))
    run()
    assert counts == Counter(), f"a training step read tensors back: {dict(counts)}"
    trainer._flush_interval()  # what a log line (and a checkpoint) reads
    assert counts == Counter(tolist=1)
    assert trainer.progress.interval_tokens == tokens > 0
