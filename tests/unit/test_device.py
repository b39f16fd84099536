"""Where tensors live and in which precision: `precision: auto` on GPUs of each generation."""

from __future__ import annotations

import platform
import time

import pytest
import torch

from seq2seq import device
from seq2seq.device import (
    autocast_dtype,
    cpu_has_int8_dot_products,
    faster_cpu_dtype,
    has_native_bf16,
    resolve_device,
)

GPU = torch.device("cuda", 0)


@pytest.mark.parametrize(
    ("capability", "expected"),
    [((7, 0), torch.float16), ((7, 5), torch.float16), ((8, 0), torch.bfloat16), ((9, 0), torch.bfloat16)],
)
def test_auto_precision_is_bf16_only_where_the_gpu_computes_in_bf16(monkeypatch, capability, expected):
    """V100 (7.0) and T4 (7.5) emulate bf16, which torch.cuda.is_bf16_supported() counts: they get
    fp16 with a loss scaler; Ampere (8.0) and Hopper (9.0) get bf16."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert has_native_bf16(GPU) is (expected is torch.bfloat16)
    assert autocast_dtype(GPU, "auto") is expected


def test_auto_precision_on_the_cpu_is_fp32_until_measured():
    assert autocast_dtype(torch.device("cpu"), "auto") is None


def test_choosing_a_gpu_leaves_the_matmul_precision_alone(monkeypatch):
    """fp32 means fp32: choosing a device does not switch TF32 on for the whole process."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    flags = (torch.backends.cuda.matmul, "allow_tf32"), (torch.backends.cudnn, "allow_tf32")
    before = [getattr(owner, name) for owner, name in flags]
    try:
        assert resolve_device("cuda") == torch.device("cuda")
        assert [getattr(owner, name) for owner, name in flags] == before
    finally:
        for (owner, name), value in zip(flags, before, strict=True):
            setattr(owner, name, value)


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


class StepCosting:
    """A probe step that costs `fp32` or `bf16` seconds on its own clock (`now`), so that the timing
    is exact whatever else the machine is doing; records the dtype of each call."""

    def __init__(self, fp32: float, bf16: float):
        self.cost = {None: fp32, torch.bfloat16: bf16}
        self.seconds = 0.0
        self.calls: list[torch.dtype | None] = []

    def __call__(self, dtype):
        self.calls.append(dtype)
        self.seconds += self.cost[dtype]

    def now(self) -> float:
        return self.seconds


def faster_for(fp32: float, bf16: float, **kwargs) -> tuple[torch.dtype | None, StepCosting]:
    step = StepCosting(fp32, bf16)
    return faster_cpu_dtype(step, clock=step.now, **kwargs)[0], step


def test_the_faster_precision_is_chosen_by_timing(monkeypatch):
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: True)  # whatever this CPU is
    assert faster_for(0.02, 0.01, repeats=1)[0] is torch.bfloat16
    assert faster_for(0.01, 0.02, repeats=1)[0] is None
    assert faster_for(0.01, 0.0099, repeats=1)[0] is None  # within the noise: fp32
    assert faster_for(0.01, 0.0094, repeats=1)[0] is torch.bfloat16  # past the 5% margin


def test_the_probe_times_real_steps_on_the_wall_clock(monkeypatch):
    # the default clock: a step that sleeps twice as long in bf16 loses by far more than any jitter
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: True)
    assert faster_cpu_dtype(lambda dtype: time.sleep(0.04 if dtype else 0.01), repeats=1)[0] is None


def test_bf16_is_not_timed_on_a_cpu_without_bf16_kernels(monkeypatch):
    # an AVX2-only CPU: bf16 ran 31x slower than fp32, and the probe cost a training 100 s
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: False)
    step = StepCosting(0.01, 0.001)
    dtype, reason = faster_cpu_dtype(step, clock=step.now)
    assert dtype is None and step.calls == [] and "not timed" in reason


def test_bf16_timing_stops_once_it_has_lost(monkeypatch):
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: True)
    dtype, step = faster_for(0.01, 0.05, repeats=3)
    assert dtype is None
    assert step.calls == [None] * 4 + [torch.bfloat16] * 2  # fp32: warm-up and 3; bf16: warm-up and 1
