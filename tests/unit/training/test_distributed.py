"""Which GPU each torchrun process takes, decided before any process group forms."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from seq2seq.errors import Seq2SeqError
from seq2seq.training import distributed
from seq2seq.training.distributed import DistInfo, local_device_name, torchrun_info, training_device

RANK_3 = DistInfo(rank=3, world=4, local_rank=3)


def visible_gpus(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("name", ["auto", "cuda"])
def test_each_process_takes_the_gpu_of_its_local_rank(monkeypatch, name):
    visible_gpus(monkeypatch, 4)
    assert local_device_name(name, RANK_3) == "cuda:3"


@pytest.mark.parametrize("name", ["auto", "cuda", "cuda:0"])
def test_a_process_shown_only_its_own_gpu_takes_that_one(monkeypatch, name):
    """A scheduler's one GPU per task (CUDA_VISIBLE_DEVICES per process): local rank 3 sees cuda:0 only."""
    visible_gpus(monkeypatch, 1)
    assert local_device_name(name, RANK_3) == "cuda:0"


@pytest.mark.parametrize("gpus", [0, 4])
def test_one_explicit_gpu_for_every_process_is_refused(monkeypatch, gpus):
    visible_gpus(monkeypatch, gpus)
    with pytest.raises(Seq2SeqError, match="CUDA_VISIBLE_DEVICES"):
        local_device_name("cuda:1", RANK_3)


def test_one_process_keeps_the_device_it_was_given(monkeypatch):
    visible_gpus(monkeypatch, 4)
    assert local_device_name("cuda:2", DistInfo()) == "cuda:2"


@pytest.mark.parametrize(("name", "message"), [("cuda:0", "CUDA_VISIBLE_DEVICES"), ("cuda", "no CUDA GPU")])
def test_a_device_torchrun_cannot_use_is_refused_before_any_group_forms(monkeypatch, name, message):
    """Every rank refuses alike, with a user error (exit code 2), instead of waiting for the others."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with pytest.raises(Seq2SeqError, match=message):
        training_device(name, torchrun_info())
    assert not dist.is_initialized() and distributed._host_group is None
