"""Subword regularization through `s2s train`: a run killed and resumed in a fresh process trains on
batches bit-identical to an uninterrupted run's, and fresh processes sample a pair's segmentation
alike."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.data.augment import mixed_keys
from seq2seq.data.parallel import Batch
from seq2seq.data.subword import sampled_pair, subword_sampler
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.run.layout import RunDir
from seq2seq.training.trainer import Trainer
from tests.conftest import ROOT, tiny_config_dict
from tests.helpers import run_cli, stopped_before

pytestmark = pytest.mark.slow

AUGMENT = {"subword": 0.5, "subword_alpha": 0.3, "upper": 0.1}  # some pairs sampled and upper-cased
STEPS, SAVED, KILLED = 24, 8, 11  # checkpoints every 8 steps; killed before step 11, resumed from 8


def write_config(tmp_path: Path, name: str, kind: str) -> Path:
    """The tiny config as one corpus whose pairs are sampled, on a `kind` tokenizer (unigram or bpe)."""
    raw = tiny_config_dict(tmp_path, max_steps=STEPS, valid_every=SAVED, valid_bleu=False, max_tokens=512)
    raw["run_dir"] = str(tmp_path / name)
    data = raw["data"]
    corpus = {"name": "tiny", "src": data.pop("train_src"), "tgt": data.pop("train_tgt"), "augment": AUGMENT}
    data["corpora"] = [corpus]
    raw["tokenizer"]["type"] = kind
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


Tensors = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def recording(steps: dict[int, list[Tensors]], train_step: Callable[..., torch.Tensor]):
    """`train_step`, keeping what each step trains on in `steps`: step -> (src, tgt_in, tgt_out) a batch."""

    def record(self: Trainer, batches: list[Batch], total_tokens: int | None = None) -> torch.Tensor:
        steps[self.progress.step + 1] = [
            (b.src.clone(), b.tgt_in.clone(), b.tgt_out.clone()) for b in batches
        ]
        return train_step(self, batches, total_tokens)

    return record


# `s2s ARGS` in a fresh process, what each step trains on saved to OUT: python -c RECORDED OUT ARGS
RECORDED = """
import sys, torch
from seq2seq.cli import main
from seq2seq.training.trainer import Trainer
out, sys.argv = sys.argv[1], ["s2s", *sys.argv[2:]]
steps, train_step = {}, Trainer.train_step
def record(self, batches, total_tokens=None):
    steps[self.progress.step + 1] = [(b.src, b.tgt_in, b.tgt_out) for b in batches]
    return train_step(self, batches, total_tokens)
Trainer.train_step = record
try:
    main()
finally:
    torch.save(steps, out)
"""


def resumed_in_a_fresh_process(config: Path, out: Path) -> dict[int, list[Tensors]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-c", RECORDED, str(out), "train", str(config), "--resume"]
    done = subprocess.run(args, capture_output=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr.decode()
    return torch.load(out, weights_only=True)


def invoke(*args: str, code: int = 0) -> None:
    result = run_cli(*args)
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_a_killed_run_resumes_on_bit_identical_batches(tmp_path, monkeypatch, kind):
    whole, parts, train_step = {}, {}, Trainer.train_step
    monkeypatch.setattr(Trainer, "train_step", recording(whole, train_step))
    invoke("train", str(write_config(tmp_path, "whole", kind)))
    config = write_config(tmp_path, "killed", kind)
    monkeypatch.setattr(Trainer, "train_step", recording(parts, train_step))
    monkeypatch.setattr(Trainer, "train_step", stopped_before(KILLED, killed=True))  # as SIGKILL would
    invoke("train", str(config), code=130)
    assert sorted(parts) == list(range(1, KILLED))  # steps 9 and 10 trained, and were lost
    resumed = resumed_in_a_fresh_process(config, tmp_path / "resumed.pt")
    assert sorted(resumed) == list(range(SAVED + 1, STEPS + 1)) and sorted(whole) == list(range(1, STEPS + 1))
    for step, batches in resumed.items():
        assert len(batches) == len(whole[step]), step
        for got, expected in zip(batches, whole[step], strict=True):
            assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True)), step
    log = (tmp_path / "whole" / "train.log").read_text(encoding="utf-8")
    epochs = {int(e) for e, count in re.findall(r"epoch (\d+): .*subword ([\d,]+)\)", log) if count != "0"}
    assert len(epochs) >= 2  # sampled pairs in every epoch trained, the resumed ones included
    losses = [
        {r["step"]: r["train_loss"] for r in RunDir(tmp_path / run).read_metrics() if r["kind"] == "train"}
        for run in ("killed", "whole")
    ]
    assert losses[0] == losses[1]


# a pair's sampled ids in a fresh process: the tokenizer, then the source lines (targets: upper-cased)
SAMPLING = """
import json, sys
from seq2seq.data.augment import mixed_keys
from seq2seq.data.subword import sampled_pair, subword_sampler
from seq2seq.data.tokenizer import Tokenizer
sampler, lines = subword_sampler(Tokenizer(sys.argv[1])), sys.argv[2:]
keys = mixed_keys(1, 0, 7, range(len(lines)))
print(json.dumps([sampled_pair(sampler, sampler, (s, s.upper()), int(k), 0.3) for s, k in zip(lines, keys)]))
"""


def test_fresh_processes_sample_a_pair_alike(tiny_run):
    tokenizer = RunDir(tiny_run.run).tokenizer_dir / "spm.model"
    lines = (tiny_run.data / "valid.src").read_text(encoding="utf-8").splitlines()
    tok = Tokenizer(tokenizer)
    sampler = subword_sampler(tok)
    for line in lines:  # this process has sampled before (SentencePiece too); a fresh one has not
        sampler.sample(line, 0.3, random.Random(5))
        tok.sp.encode(line, enable_sampling=True, alpha=0.3, nbest_size=-1)
    keys = mixed_keys(1, 0, 7, range(len(lines)))
    here = [
        list(sampled_pair(sampler, sampler, (s, s.upper()), int(k), 0.3))
        for s, k in zip(lines, keys, strict=True)
    ]
    runs = [
        subprocess.run(
            [sys.executable, "-c", SAMPLING, str(tokenizer), *lines], capture_output=True, cwd=ROOT
        )
        for _ in range(2)
    ]
    assert [json.loads(run.stdout) for run in runs] == [here, here], runs[0].stderr
    usual = [[tok.encode([s])[0], tok.encode([s.upper()])[0]] for s in lines]
    assert here != usual  # the pairs compared are sampled
