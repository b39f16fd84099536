"""What this CPU is: its vendor and feature flags (/proc/cpuinfo), and the cores a process may use.

Read without torch, so that what decodes with CTranslate2 (int8 with or without VNNI, a thread per
core) never imports it; torch's own choices (`seq2seq.device`) read the same features.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


@dataclass(frozen=True)
class CpuFeatures:
    """What /proc/cpuinfo says of the CPU: its vendor and its feature flags."""

    vendor: str  # vendor_id: GenuineIntel, AuthenticAMD; "" where there is none to read
    flags: frozenset[str]  # avx2, avx512_bf16, amx_bf16, ...; empty where there are none to read


def _cpuinfo_field(cpuinfo: str, name: str) -> str | None:
    """The value of the first `name` line of `cpuinfo`, or None where there is none (no /proc, not x86)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            line = next((line for line in f if line.split(":", 1)[0].strip() == name), None)
    except OSError:
        return None
    return line.split(":", 1)[1].strip() if line is not None else None


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The CPU's feature flags (avx2, avx512_vnni, amx_int8, ...) from `cpuinfo`'s first `flags` line,
    or None where there is none to read (no /proc, not x86)."""
    flags = _cpuinfo_field(cpuinfo, "flags")
    return frozenset(flags.split()) if flags is not None else None


def read_cpu_features(cpuinfo: str = "/proc/cpuinfo") -> CpuFeatures:
    """This CPU's vendor and flags (`CpuFeatures`), what `precision: auto` decides from."""
    return CpuFeatures(_cpuinfo_field(cpuinfo, "vendor_id") or "", cpu_flags(cpuinfo) or frozenset())


def cpu_has_int8_dot_products(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether int8 products sum in int32 on this CPU: not on an x86 CPU without VNNI (AVX2 only, as
    AMD's Zen 3), where pairs of u8 x s8 products sum in int16 and full-range int8 weights overflow.
    True where it cannot tell (not x86, no `cpuinfo`)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    flags = cpu_flags(cpuinfo)
    return flags is None or not INT8_DOT_FLAGS.isdisjoint(flags)


THREAD_VARIABLES = ("MKL_NUM_THREADS", "OMP_NUM_THREADS")  # as torch reads them: the first one set wins


def usable_cores(sysfs: str = "/sys/devices/system/cpu") -> int:
    """The physical cores this process may run on (its CPU affinity; two hyperthreads of one core
    count once), at most MKL_NUM_THREADS or OMP_NUM_THREADS where one is set: the threads torch
    computes with by default, counted without importing it. A CPU whose core `sysfs` does not name
    counts as a core of its own.
    """
    affinity = getattr(os, "sched_getaffinity", None)  # Linux's; elsewhere every CPU is usable
    cpus = sorted(affinity(0)) if affinity is not None else range(os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = Path(sysfs) / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            cores.add((package, (topology / "core_id").read_text().strip()))
        except OSError:
            cores.add(("cpu", str(cpu)))
    asked = next((os.environ[name] for name in THREAD_VARIABLES if os.environ.get(name)), "")
    return min(len(cores), int(asked)) if asked.isdigit() and int(asked) > 0 else len(cores)
