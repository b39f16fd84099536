"""What this CPU is, read without torch: its vendor and feature flags, and the cores a process may use."""

from __future__ import annotations

import platform

import pytest

from seq2seq import cpu
from seq2seq.cpu import CpuFeatures, cpu_has_int8_dot_products, read_cpu_features, usable_cores


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("fpu sse2 avx avx2 fma", False),  # AMD Zen 3: int8 pairs sum in int16
        ("fpu avx2 avx512f avx512bw", False),  # AVX-512 without VNNI (Skylake-SP)
        ("fpu avx2 avx512f avx512_vnni", True),
        ("fpu avx2 avx_vnni", True),
        ("fpu avx2 amx_int8 amx_tile", True),
    ],
)
def test_int8_dot_products_are_read_from_the_cpu_flags(tmp_path, monkeypatch, flags, expected):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert cpu_has_int8_dot_products(str(cpuinfo)) is expected


def test_int8_dot_products_are_assumed_where_the_cpu_cannot_be_read(tmp_path, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert cpu_has_int8_dot_products(str(tmp_path / "missing"))
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    (tmp_path / "cpuinfo").write_text("flags\t: fpu avx2\n")
    assert cpu_has_int8_dot_products(str(tmp_path / "cpuinfo"))


def test_the_cpu_features_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx512_bf16\nvmx flags\t: ept\n\n"
        "processor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu\n"
    )
    assert read_cpu_features(str(cpuinfo)) == CpuFeatures("AuthenticAMD", frozenset({"fpu", "avx512_bf16"}))
    assert read_cpu_features(str(tmp_path / "missing")) == CpuFeatures("", frozenset())


def topology(root, cores: list[tuple[int, int]]):
    """A sysfs cpu folder whose logical CPU i sits on (package, core) `cores[i]`."""
    for i, (package, core) in enumerate(cores):
        folder = root / f"cpu{i}" / "topology"
        folder.mkdir(parents=True)
        (folder / "physical_package_id").write_text(f"{package}\n")
        (folder / "core_id").write_text(f"{core}\n")
    return str(root)


def test_hyperthreads_of_one_core_count_once(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert usable_cores(topology(tmp_path, [(0, 0), (0, 0), (0, 1), (1, 0)])) == 3


def test_only_the_cpus_the_process_may_use_count(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {2})
    assert usable_cores(topology(tmp_path, [(0, 0), (0, 1), (0, 2)])) == 1


def test_a_cpu_without_a_topology_counts_as_a_core(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1})
    assert usable_cores(str(tmp_path / "missing")) == 2


@pytest.mark.parametrize(
    ("omp", "mkl", "expected"),
    [
        ("1", None, 1),
        ("3", None, 3),
        ("64", None, 4),
        (None, "2", 2),
        ("1", "3", 3),
        ("0", None, 4),
        ("x", None, 4),
    ],
)
def test_the_thread_variables_cap_the_cores(tmp_path, monkeypatch, omp, mkl, expected):
    """As torch reads them: MKL_NUM_THREADS first, then OMP_NUM_THREADS; never more than the cores,
    and a value that is no positive number is ignored."""
    for name, value in (("OMP_NUM_THREADS", omp), ("MKL_NUM_THREADS", mkl)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert usable_cores(topology(tmp_path, [(0, 0), (0, 1), (0, 2), (0, 3)])) == expected
