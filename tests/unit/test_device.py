"""Where tensors live and in which precision: `precision: auto` on GPUs of each generation."""

from __future__ import annotations

import platform

import pytest
import torch

from seq2seq.device import autocast_dtype, cpu_has_int8_dot_products, has_native_bf16, resolve_device

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
        for (owner, name), value in zip(flags, before):
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
