"""DistributedDataParallel on the CPU: 2 processes with the gloo backend, as torchrun would start them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
import yaml
from torch.testing import assert_close

from seq2seq.config import Config, config_from_dict
from seq2seq.data.prepared import ensure_prepared_corpus, load_prepared, prepared_corpus_dir
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.models.build import build_model
from seq2seq.rundir import RunDir, data_checksums
from seq2seq.training.distributed import DistInfo, init_distributed, shutdown
from seq2seq.training.trainer import Trainer
from seq2seq.training.validation import ValidSet
from tests.conftest import ROOT, tiny_config_dict

WORLD = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_trainer(cfg: Config, info: DistInfo, tok_dir: Path) -> Trainer:
    torch.manual_seed(cfg.train.seed)
    toks = load_tokenizers(tok_dir, cfg.tokenizer.joint)
    data = load_prepared(prepared_corpus_dir(cfg))
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    return Trainer(cfg, RunDir(cfg.run_dir), model, toks, {}, data, ValidSet(data, [], []), info, "cpu")


def worker(rank: int, port: int, raw: dict, tok_dir: str, out: str, mode: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(WORLD),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)
    info = init_distributed("cpu")
    try:
        trainer = make_trainer(config_from_dict(raw), info, Path(tok_dir))
        if mode == "one_step":
            batches = trainer.order.batches(0)
            trainer.train_step([trainer.data.batch(batches[0])])
            seen = [batches[0].tolist()]
        else:
            seen = [b.tolist() for b in trainer.order.batches(0)]
            trainer.fit()
        torch.save({"model": trainer.model.state_dict(), "seen": seen}, Path(out) / f"rank{rank}.pt")
    finally:
        shutdown(info)


@pytest.fixture
def setup(tmp_path):
    raw = tiny_config_dict(tmp_path, max_steps=4, valid_every=100, valid_bleu=False, num_threads=1)
    raw["model"]["dropout"] = 0.0  # identical arithmetic on both sides of the comparison
    cfg = config_from_dict(raw)
    Path(cfg.run_dir).mkdir()
    tok_dir = tmp_path / "tok"
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.train_src, cfg.data.train_tgt, tok_dir)
    tokenizer = tokenizer_checksums(tok_dir, cfg.tokenizer.joint)
    ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), tokenizer, workers=1)
    return raw, cfg, tok_dir


def spawn(raw: dict, tok_dir: Path, out: Path, mode: str) -> list[dict]:
    mp.spawn(worker, args=(free_port(), raw, str(tok_dir), str(out), mode), nprocs=WORLD, join=True)
    return [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]


def test_one_ddp_step_equals_one_step_on_the_union_of_batches(setup, tmp_path):
    raw, cfg, tok_dir = setup
    ranks = spawn(raw, tok_dir, tmp_path, "one_step")
    single = make_trainer(cfg, DistInfo(), tok_dir)
    single.train_step([single.data.batch(r["seen"][0]) for r in ranks])
    for name, value in single.model.state_dict().items():
        assert_close(ranks[0]["model"][name], value, atol=2e-6, rtol=1e-5)


def test_ranks_end_identical_and_see_disjoint_batches_covering_the_epoch(setup, tmp_path):
    raw, cfg, tok_dir = setup
    ranks = spawn(raw, tok_dir, tmp_path, "fit")
    for name, value in ranks[0]["model"].items():
        assert torch.equal(value, ranks[1]["model"][name]), name
    seen = [i for r in ranks for batch in r["seen"] for i in batch]
    assert sorted(seen) == list(range(len(make_trainer(cfg, DistInfo(), tok_dir).data)))


def test_torchrun_trains_on_cpu(tmp_path):
    raw = tiny_config_dict(tmp_path, max_steps=4, valid_every=2, num_threads=1)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={WORLD}",
        "-m",
        "seq2seq",
        "train",
        str(config),
        "--device",
        "cpu",
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = Path(raw["run_dir"])
    assert (run / "checkpoints" / "last.pt").is_file()
    log = (run / "train.log").read_text()
    assert "x 2 process(es)" in log
    assert sum(r["kind"] == "valid" for r in RunDir(run).read_metrics()) == 2  # rank 0 only
