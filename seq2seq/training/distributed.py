"""torch.distributed set-up for `torchrun`: who am I, and the few collectives training needs.

Two process groups. The default one (NCCL on GPUs, gloo on the CPU) carries the gradients, inside
DistributedDataParallel, and nothing else. A second, gloo, group carries the host's bookkeeping
(stop flags, a failure in rank 0's set-up, sums for the log, the random states of a checkpoint):
CPU numbers, so reading a result never waits for the GPU, and a timeout long enough for the other
ranks to wait while rank 0 alone trains the tokenizer, prepares a large corpus, validates or saves.
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

from seq2seq.errors import Seq2SeqError

GRADIENT_TIMEOUT = datetime.timedelta(minutes=30)  # a gradient all-reduce: every rank is at it together
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


def init_distributed(device_name: str, host_timeout: datetime.timedelta = HOST_TIMEOUT) -> DistInfo:
    """Join the process group that `torchrun` describes in the environment; a no-op for one process.

    NCCL on GPUs, gloo on the CPU, and the gloo group for the host's bookkeeping. Each process uses
    the GPU of its local rank. An explicit `cuda:N` is refused on every rank alike, before any group
    forms (every rank would take GPU N).
    """
    global _host_group
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return DistInfo()
    info = DistInfo(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    device_name = local_device_name(device_name, info)  # refuses cuda:N before anything waits
    use_cuda = device_name.startswith("cuda")
    if use_cuda:
        torch.cuda.set_device(info.local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo", timeout=GRADIENT_TIMEOUT)
    _host_group = dist.new_group(backend="gloo", timeout=host_timeout)
    return info


def local_device_name(device_name: str, info: DistInfo) -> str:
    """Under torchrun each process takes the GPU of its local rank (`auto` or `cuda`).

    `cuda:N` there is an error: each process would take the same GPU N. Which GPUs a run uses is
    chosen with CUDA_VISIBLE_DEVICES.
    """
    if not info.enabled:
        return device_name
    if device_name.startswith("cuda:"):
        raise Seq2SeqError(
            f"device {device_name!r} under torchrun would put all {info.world} processes on one GPU; "
            "use --device cuda (each process takes the GPU of its local rank) and choose the GPUs with "
            "CUDA_VISIBLE_DEVICES"
        )
    if device_name in ("auto", "cuda") and torch.cuda.is_available():
        return f"cuda:{info.local_rank}"
    return device_name


def data_parallel(module: nn.Module, device: torch.device) -> DistributedDataParallel:
    """`module` under DistributedDataParallel, its gradients averaged over the default group.

    Buffers are not re-sent on every forward: the models' only buffers (the position table) are
    constants, the same on every rank from the start.
    """
    params = inspect.signature(DistributedDataParallel.__init__).parameters
    # torch 2.13 renamed broadcast_buffers (for a forward's re-send) to forward_sync_buffers
    no_resend = {"forward_sync_buffers" if "forward_sync_buffers" in params else "broadcast_buffers": False}
    device_ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=device_ids, **no_resend)


def _host(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def all_reduce_sum(value: float, info: DistInfo) -> float:
    """The sum of `value` over every rank."""
    if not info.enabled:
        return value
    t = _host([value])
    dist.all_reduce(t, group=_host_group)
    return float(t[0])


def broadcast_from_main(value: float, info: DistInfo) -> float:
    """Rank 0's `value`, on every rank."""
    if not info.enabled:
        return value
    t = _host([value])
    dist.broadcast(t, src=0, group=_host_group)
    return float(t[0])


def any_rank(flags: list[bool], info: DistInfo) -> list[bool]:
    """Each flag is true on every rank if it is true on any (so all ranks stop together)."""
    if not info.enabled:
        return flags
    t = _host([float(f) for f in flags])
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=_host_group)
    return [bool(v) for v in t.tolist()]


def all_gather_object(obj: Any, info: DistInfo) -> list[Any]:
    """Every rank's `obj` (picklable), indexed by rank."""
    if not info.enabled:
        return [obj]
    gathered: list[Any] = [None] * info.world
    dist.all_gather_object(gathered, obj, group=_host_group)
    return gathered


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier(group=_host_group)


def shutdown(info: DistInfo) -> None:
    global _host_group
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
    _host_group = None
