"""The one description of what the numbers were measured on, and when."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

import torch

from seq2seq.cpu import cpu_flags


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, or what `platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")


def cpu_features() -> str | None:
    """Which of the vector and matrix extensions that decoding kernels use the CPU has (FEATURES, from
    /proc/cpuinfo's flags), or None where there is no /proc/cpuinfo."""
    if not Path("/proc/cpuinfo").is_file():
        return None
    flags = cpu_flags() or frozenset()
    return " ".join(f for f in FEATURES if f in flags) or "none of " + " ".join(FEATURES)


def memory_gib() -> float | None:
    """Total memory of the machine in GiB (None where there is no /proc/meminfo)."""
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        return None
    kib = int(meminfo.read_text().split("MemTotal:", 1)[1].split()[0])
    return round(kib / 2**20, 1)


def describe(device: torch.device) -> dict[str, object]:
    """CPU, its features, cores, memory, GPU, device, torch/python versions, torch threads and the date."""
    return {
        "cpu": cpu_model(),
        "cpu_features": cpu_features(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "device": str(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def one_line(machine: dict[str, object]) -> str:
    """`cpu ... | cores 2 | ...`, leaving out what is unknown."""
    return " | ".join(f"{k} {v}" for k, v in machine.items() if v is not None)
