"""torch.distributed set-up for `torchrun`: who am I, and the few collectives training needs."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


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


def init_distributed(device_name: str) -> DistInfo:
    """Join the process group that `torchrun` describes in the environment; a no-op for one process.

    NCCL on GPUs, gloo on the CPU. Each process uses the GPU of its local rank.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return DistInfo()
    info = DistInfo(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    use_cuda = device_name != "cpu" and torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(info.local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo", timeout=datetime.timedelta(minutes=30))
    return info


def local_device_name(device_name: str, info: DistInfo) -> str:
    """Under torchrun each process takes the GPU of its local rank."""
    if info.enabled and device_name in ("auto", "cuda") and torch.cuda.is_available():
        return f"cuda:{info.local_rank}"
    return device_name


def all_reduce_sum(value: float, info: DistInfo, device: torch.device) -> float:
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item())


def broadcast_from_main(value: float, info: DistInfo, device: torch.device) -> float:
    """Rank 0's `value`, on every rank."""
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.broadcast(t, src=0)
    return float(t.item())


def any_rank(flags: list[bool], info: DistInfo, device: torch.device) -> list[bool]:
    """Each flag is true on every rank if it is true on any (so all ranks stop together)."""
    if not info.enabled:
        return flags
    t = torch.tensor([float(f) for f in flags], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [bool(v) for v in t.tolist()]


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
