"""Where tensors live and in which precision: `precision: auto` on GPUs of each generation and on CPUs
of each kind of features."""

from __future__ import annotations

import re
import time

import pytest
import torch

from seq2seq import device
from seq2seq.cpu import CpuFeatures
from seq2seq.device import auto_cpu_dtype, autocast_dtype, bf16_choice, has_native_bf16, resolve_device

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


def test_auto_precision_on_the_cpu_is_left_to_the_cpu_features():
    assert autocast_dtype(torch.device("cpu"), "auto") is None  # the command asks `auto_cpu_dtype`


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


AMX = "fpu avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8"
ZEN4 = "fpu avx2 avx512f avx512bw avx512_vnni avx512_bf16"
SKYLAKE = "fpu avx2 avx512f avx512bw"  # AVX-512 without BF16: oneDNN converts every product


@pytest.mark.parametrize(
    ("vendor", "flags", "expected"),
    [
        ("GenuineIntel", AMX, torch.bfloat16),  # Sapphire Rapids and later
        ("AuthenticAMD", ZEN4, torch.bfloat16),
        ("GenuineIntel", ZEN4, None),  # AVX512-BF16 without AMX on an Intel: bf16 trained at 0.57x
        ("GenuineIntel", SKYLAKE, None),
        ("AuthenticAMD", "fpu sse2 avx avx2 fma", None),  # Zen 3: bf16 emulated, 0.03x
        ("", "", None),  # nothing to read (no /proc, not x86)
    ],
)
def test_auto_precision_on_a_cpu_is_a_function_of_its_features(monkeypatch, vendor, flags, expected):
    """The same CPU makes the same choice at every start, however busy it is: no timing decides it."""
    cpu = CpuFeatures(vendor, frozenset(flags.split()))
    monkeypatch.setattr(device, "read_cpu_features", lambda cpuinfo="/proc/cpuinfo": cpu)
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: True)
    monkeypatch.setattr(time, "perf_counter", lambda: pytest.fail("the choice read a clock"))
    choices = {auto_cpu_dtype() for _ in range(3)}
    assert len(choices) == 1
    ((dtype, reason),) = choices
    assert dtype is expected and reason.startswith("bf16" if expected else "fp32")


def test_bf16_is_not_chosen_without_onednn_bf16_kernels():
    amx = CpuFeatures("GenuineIntel", frozenset(AMX.split()))
    assert bf16_choice(amx, bf16_kernels=False) == (
        None,
        "fp32: this torch has no oneDNN bf16 kernels for this CPU",
    )


def test_every_measurement_names_its_machine_and_date():
    for row in device.BF16_MEASURED:
        assert re.search(r"(Intel|AMD) .*\b20\d\d-\d\d-\d\d\b", row.measured), row
