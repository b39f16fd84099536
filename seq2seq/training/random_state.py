"""Every rank's random state (dropout), kept in checkpoints so a resumed run draws what it would have."""

from __future__ import annotations

import torch

from seq2seq.training.distributed import DistInfo, all_gather_object


def gather_rng_states(info: DistInfo, device: torch.device) -> list[torch.Tensor]:
    """Every rank's torch RNG state (CPU, then CUDA on a GPU), indexed by rank."""
    mine = torch.get_rng_state()
    if device.type == "cuda":
        mine = torch.cat([mine, torch.cuda.get_rng_state(device)])
    return all_gather_object(mine, info)


def set_rng_state(state: torch.Tensor, device: torch.device) -> None:
    """Restore one rank's state as `gather_rng_states` gave it."""
    cpu_size = torch.get_rng_state().numel()
    torch.set_rng_state(state[:cpu_size])
    if device.type == "cuda" and state.numel() > cpu_size:
        torch.cuda.set_rng_state(state[cpu_size:], device)
