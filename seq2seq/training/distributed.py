"""torch.distributed set-up for `torchrun`: who am I, and the few collectives training needs.

Two process groups. The default one (NCCL on GPUs, gloo on the CPU) carries the gradients, inside
DistributedDataParallel, and nothing else. A second, gloo, group carries the host's bookkeeping
(stop flags, a failure in rank 0's set-up, sums for the log, the random states of a checkpoint):
CPU numbers, so reading a result never waits for the GPU. A collective every rank reaches together
waits at most COLLECTIVE_TIMEOUT (a rank that hangs stops the others); a `patient` one, where the
other ranks wait while rank 0 alone trains the tokenizer, prepares a large corpus, validates or
saves, waits up to HOST_TIMEOUT.
"""

from __future__ import annotations

import datetime
import inspect
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from seq2seq.device import resolve_device
from seq2seq.errors import Seq2SeqError

COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=30)  # every rank is at it together: gradients, a step's flags
# the other ranks wait this long for rank 0 alone: tokenizer training and encoding a corpus of tens of
# millions of pairs take hours on one process (`s2s prepare` beforehand does it without holding GPUs)
HOST_TIMEOUT = datetime.timedelta(hours=24)

_host_group: dist.ProcessGroup | None = None


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def torchrun_info() -> DistInfo:
    """Who this process is among those `torchrun` started, as its environment says; one process
    started alone is rank 0 of 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return DistInfo()
    return DistInfo(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))


def training_device(device_name: str, info: DistInfo) -> torch.device:
    """The device this process trains on: `device_name` (train.device), under torchrun the GPU of its
    local rank (`local_device_name`). Resolved once, where the command starts, before any group
    forms: a device torchrun cannot use is refused on every rank alike."""
    return resolve_device(local_device_name(device_name, info))


def init_distributed(info: DistInfo, device: torch.device) -> None:
    """Join the process group that `torchrun` describes; a no-op for one process.

    NCCL on GPUs, gloo on the CPU, and the gloo group for the host's bookkeeping. Each process uses
    `device`, the GPU of its local rank (`training_device`).
    """
    global _host_group
    if not info.enabled:
        return
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=COLLECTIVE_TIMEOUT)
    _host_group = dist.new_group(backend="gloo", timeout=HOST_TIMEOUT)


def local_device_name(device_name: str, info: DistInfo) -> str:
    """Under torchrun each process takes the GPU of its local rank (`auto` or `cuda`), or the one GPU
    it sees where each process is shown only its own (a scheduler's `--gpus-per-task=1`).

    `cuda:N` among several visible GPUs is an error: each process would take the same GPU N. Which
    GPUs a run uses is chosen with CUDA_VISIBLE_DEVICES.
    """
    if not info.enabled:
        return device_name
    one_gpu_each = torch.cuda.is_available() and torch.cuda.device_count() == 1
    if device_name.startswith("cuda:") and not (one_gpu_each and device_name == "cuda:0"):
        raise Seq2SeqError(
            f"device {device_name!r} under torchrun would put all {info.world} processes on one GPU; "
            "use --device cuda (each process takes the GPU of its local rank) and choose the GPUs with "
            "CUDA_VISIBLE_DEVICES"
        )
    if device_name in ("auto", "cuda", "cuda:0") and torch.cuda.is_available():
        return "cuda:0" if one_gpu_each else f"cuda:{info.local_rank}"
    return device_name


def data_parallel(module: nn.Module, device: torch.device) -> DistributedDataParallel:
    """`module` under DistributedDataParallel, its gradients averaged over the default group.

    Buffers are not re-sent on every forward: the models' only buffers (the position table) are
    constants, the same on every rank from the start.
    """
    params = inspect.signature(DistributedDataParallel.__init__).parameters
    device_ids = [device.index] if device.type == "cuda" else None
    # torch 2.13 renamed broadcast_buffers (for a forward's re-send) to forward_sync_buffers
    if "forward_sync_buffers" in params:
        return DistributedDataParallel(module, device_ids=device_ids, forward_sync_buffers=False)
    return DistributedDataParallel(module, device_ids=device_ids, broadcast_buffers=False)


def _host(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def _wait(work: dist.Work, patient: bool) -> None:
    """Wait for a host collective: up to HOST_TIMEOUT where rank 0 may be working alone (`patient`)."""
    work.wait(HOST_TIMEOUT if patient else COLLECTIVE_TIMEOUT)


def _all_reduce(values: list[float], op: dist.ReduceOp.RedOpType, patient: bool) -> list[float]:
    t = _host(values)
    _wait(dist.all_reduce(t, op=op, group=_host_group, async_op=True), patient)
    return t.tolist()


def all_reduce_sum(value: float, info: DistInfo) -> float:
    """The sum of `value` over every rank."""
    return _all_reduce([value], dist.ReduceOp.SUM, patient=False)[0] if info.enabled else value


def all_reduce_max(value: float, info: DistInfo) -> float:
    """The largest `value` of any rank."""
    return _all_reduce([value], dist.ReduceOp.MAX, patient=False)[0] if info.enabled else value


def broadcast_from_main(value: float, info: DistInfo, patient: bool = False) -> float:
    """Rank 0's `value`, on every rank (`patient`: rank 0 may have worked alone before sending it)."""
    if not info.enabled:
        return value
    t = _host([value])
    _wait(dist.broadcast(t, src=0, group=_host_group, async_op=True), patient)
    return float(t[0])


def any_rank(flags: list[bool], info: DistInfo, patient: bool = False) -> list[bool]:
    """Each flag is true on every rank if it is true on any (so all ranks stop together)."""
    if not info.enabled:
        return flags
    return [bool(v) for v in _all_reduce([float(f) for f in flags], dist.ReduceOp.MAX, patient)]


def all_gather_object(obj: Any, info: DistInfo) -> list[Any]:
    """Every rank's `obj` (picklable), indexed by rank."""
    if not info.enabled:
        return [obj]
    gathered: list[Any] = [None] * info.world
    dist.all_gather_object(gathered, obj, group=_host_group)
    return gathered


def barrier(info: DistInfo, patient: bool = False) -> None:
    if info.enabled:
        _wait(dist.barrier(group=_host_group, async_op=True), patient)


def shutdown(info: DistInfo) -> None:
    global _host_group
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
    _host_group = None
