"""DistributedDataParallel on the CPU: 2 processes with the gloo backend, as torchrun would start them."""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import yaml
from torch.testing import assert_close

from seq2seq.config import Config, config_from_dict
from seq2seq.data.prepared import ensure_prepared_corpus, load_prepared, prepared_corpus_dir
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.models.build import build_model
from seq2seq.run.checks import data_checksums
from seq2seq.run.layout import RunDir
from seq2seq.training import distributed
from seq2seq.training.distributed import DistInfo, any_rank, init_distributed, shutdown, torchrun_info
from seq2seq.training.setup import shared_failure
from seq2seq.training.trainer import Trainer
from seq2seq.training.validation import ValidSet
from tests.conftest import ROOT, tiny_config_dict

pytestmark = pytest.mark.slow

WORLD = 2
CPU = torch.device("cpu")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_trainer(cfg: Config, info: DistInfo, tok_dir: Path) -> Trainer:
    torch.manual_seed(cfg.train.seed)
    toks = load_tokenizers(tok_dir, cfg.tokenizer.joint)
    data = load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    return Trainer(cfg, RunDir(cfg.run_dir), model, toks, {}, data, [ValidSet(data, [], [])], info, CPU)


def join_group(rank: int, port: int) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(WORLD),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)


class CollectiveCount:
    """Counts the collectives run on the default (gradient) process group, by name."""

    NAMES = ("all_reduce", "broadcast", "all_gather_object", "barrier", "_broadcast_coalesced")

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.real = {name: getattr(dist, name) for name in self.NAMES}

    def __enter__(self) -> CollectiveCount:
        for name, real in self.real.items():
            setattr(dist, name, self._counted(name, real))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, real in self.real.items():
            setattr(dist, name, real)

    def _counted(self, name, real):
        def call(*args, **kwargs):
            group = args[0] if name == "_broadcast_coalesced" else kwargs.get("group")
            if (
                group is None
                or group is dist.group.WORLD
                or group == dist.distributed_c10d._get_default_group()
            ):
                self.calls[name] += 1
            return real(*args, **kwargs)

        return call


def worker(rank: int, port: int, raw: dict, tok_dir: str, out: str, mode: str) -> None:
    join_group(rank, port)
    info = torchrun_info()
    init_distributed(info, CPU)
    try:
        trainer = make_trainer(config_from_dict(raw), info, Path(tok_dir))
        result: dict = {}
        if mode == "one_step":
            step = trainer.order.next_step(trainer.progress)
            trainer.train_step([trainer.data.batch(b) for b in step.batches], step.total_tokens)
            result["seen"] = [b.tolist() for b in step.batches]
        else:
            result["seen"] = [b.tolist() for b in trainer.order.batches(0)]
            with CollectiveCount() as count:
                trainer.fit()
            result["default_group_calls"] = dict(count.calls)
        result["model"] = trainer.model.state_dict()
        torch.save(result, Path(out) / f"rank{rank}.pt")
    finally:
        shutdown(info)


@pytest.fixture
def setup(tmp_path):
    raw = tiny_config_dict(tmp_path, max_steps=4, valid_every=100, valid_bleu=False, num_threads=1)
    raw["model"]["dropout"] = 0.0  # identical arithmetic on both sides of the comparison
    cfg = config_from_dict(raw)
    Path(cfg.run_dir).mkdir()
    tok_dir = tmp_path / "tok"
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tok_dir)
    tokenizer = tokenizer_checksums(tok_dir, cfg.tokenizer.joint)
    ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), tokenizer, workers=1)
    return raw, cfg, tok_dir


def spawn(raw: dict, tok_dir: Path, out: Path, mode: str) -> list[dict]:
    mp.spawn(worker, args=(free_port(), raw, str(tok_dir), str(out), mode), nprocs=WORLD, join=True)
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


@pytest.mark.parametrize("accum_steps", [1, 2])
def test_one_ddp_step_equals_one_step_on_the_union_of_batches(setup, tmp_path, accum_steps):
    """Each rank normalizes by the step's tokens on all ranks, which the batch order gives it without
    asking the others."""
    raw, cfg, tok_dir = setup
    raw["train"]["accum_steps"] = accum_steps
    ranks = spawn(raw, tok_dir, tmp_path, "one_step")
    single = make_trainer(cfg, DistInfo(), tok_dir)
    single.train_step([single.data.batch(batch) for r in ranks for batch in r["seen"]])
    for name, value in single.model.state_dict().items():
        assert_close(ranks[0]["model"][name], value, atol=2e-6, rtol=1e-5)


def test_ranks_end_identical_and_see_disjoint_batches_covering_the_epoch(setup, tmp_path):
    raw, cfg, tok_dir = setup
    ranks = spawn(raw, tok_dir, tmp_path, "fit")
    for name, value in ranks[0]["model"].items():
        assert torch.equal(value, ranks[1]["model"][name]), name
    seen = [i for r in ranks for batch in r["seen"] for i in batch]
    assert sorted(seen) == list(range(len(make_trainer(cfg, DistInfo(), tok_dir).data)))
    # the default group carries the gradients (inside DDP) and nothing else: no host sync per step,
    # no re-sent buffers; the bookkeeping goes over the host's gloo group
    assert [r["default_group_calls"] for r in ranks] == [{}, {}]


def waiting_worker(rank: int, port: int, out: str, patient: bool) -> None:
    """Rank 0 works alone for longer than a collective may wait (the gradient group's timeout and,
    shortened here, COLLECTIVE_TIMEOUT), then joins a host collective: patient, as after rank 0's
    set-up, or not, as the per-step flags. Each rank writes down how its collective ended."""
    join_group(rank, port)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=4))  # torchrun's group, impatient
    distributed.COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=4)
    info = torchrun_info()
    init_distributed(info, CPU)
    outcome = "done"
    try:
        if info.is_main:
            time.sleep(8)  # training the tokenizer, encoding the corpus; or hung
        with shared_failure(info) if patient else contextlib.nullcontext():
            if not patient:
                any_rank([False], info)
    except RuntimeError as e:
        outcome = "timed out" if "timed out" in str(e).lower() else f"failed: {e}"
    Path(out, f"rank{rank}").write_text(outcome)
    if patient:
        shutdown(info)
    else:  # a group whose collective timed out cannot be torn down cleanly: gloo's threads would abort
        os._exit(0)


@pytest.mark.parametrize("patient", [True, False], ids=["after rank 0's set-up", "a step's flags"])
def test_ranks_wait_for_rank_0_alone_only_where_it_may_be_working(tmp_path, patient):
    """The other ranks wait for rank 0's set-up beyond the gradient group's timeout; a collective every
    rank reaches together (a step's stop flags) still times out when one rank hangs."""
    mp.spawn(waiting_worker, args=(free_port(), str(tmp_path), patient), nprocs=WORLD, join=True)
    rank1 = (tmp_path / "rank1").read_text()
    assert rank1 == ("done" if patient else "timed out")
    if patient:
        assert (tmp_path / "rank0").read_text() == "done"


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
