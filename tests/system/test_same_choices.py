"""The same command on the same machine makes the same choices: `precision: auto` on a CPU is decided
from the CPU's features (`seq2seq.device.auto_cpu_dtype`), never from a timing taken while the machine
may be busy, so `train`, `translate`, `evaluate` and `serve` make one choice for a run on one CPU, and
each records it (the run's checkpoints, the evaluation JSON, the server's /info)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import torch

from seq2seq import device
from seq2seq.checkpoint import load_checkpoint
from seq2seq.translate.translator import Translator
from tests.conftest import train_tiny_run
from tests.helpers import run_cli

NAMES = {"bfloat16": "bf16", "float32": "fp32"}  # as the evaluation JSON and /info name a dtype
AVX512 = "fpu sse2 avx avx2 fma avx512f avx512bw avx512_vnni"


def on_cpu(monkeypatch: pytest.MonkeyPatch, vendor: str, flags: str) -> None:
    """This process runs on a CPU of `vendor` with `flags`, whose oneDNN has bf16 kernels."""
    cpu = device.CpuFeatures(vendor, frozenset(flags.split()))
    monkeypatch.setattr(device, "read_cpu_features", lambda cpuinfo="/proc/cpuinfo": cpu)
    monkeypatch.setattr(device, "cpu_has_bf16_kernels", lambda: True)


def loaded_dtypes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The precision of every translator loaded from now on, in order."""
    dtypes: list[str] = []
    load = Translator.load.__func__  # type: ignore[attr-defined]

    def recorded(cls, *args, **kwargs):
        translator = load(cls, *args, **kwargs)
        dtypes.append("bf16" if translator.dtype is torch.bfloat16 else "fp32")
        return translator

    monkeypatch.setattr(Translator, "load", classmethod(recorded))
    return dtypes


def served_info(monkeypatch: pytest.MonkeyPatch, run: Path) -> dict:
    """/info of the server `s2s serve RUN --device cpu` starts (its app, asked in-process)."""
    pytest.importorskip("fastapi", reason="the optional extra s2s[serve] (in .[dev]) is missing")
    from fastapi.testclient import TestClient

    apps = []

    def answer_nothing(app, sock: socket.socket, *rest) -> None:
        apps.append(app)
        sock.close()

    monkeypatch.setattr("seq2seq.serve.server.run", answer_nothing)
    result = run_cli("serve", str(run), "--device", "cpu", "--port", "0", "--engine", "s2s")
    assert result.exit_code == 0, result.output
    with TestClient(apps[0]) as client:
        return client.get("/info").json()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("vendor", "flags", "expected"),
    [
        ("GenuineIntel", f"{AVX512} avx512_bf16 amx_tile amx_bf16 amx_int8", "bf16"),
        ("GenuineIntel", f"{AVX512} avx512_bf16", "fp32"),
    ],
    ids=["intel-amx", "intel-avx512-bf16"],
)
def test_train_translate_evaluate_and_serve_make_the_cpus_one_choice(
    tmp_path, monkeypatch, vendor, flags, expected
):
    on_cpu(monkeypatch, vendor, flags)
    loaded = loaded_dtypes(monkeypatch)
    _, run = train_tiny_run(tmp_path, precision="auto", max_steps=2, valid_every=2)
    src, record = tmp_path / "src.txt", tmp_path / "eval.json"
    src.write_text("red cat\nthe big dog\n", encoding="utf-8")
    translated = run_cli("translate", str(run), "--device", "cpu", "--engine", "s2s", "-i", str(src))
    assert translated.exit_code == 0, translated.output
    args = ["--device", "cpu", "--engine", "s2s", "--src", str(src), "--ref", str(src), "--json", str(record)]
    evaluated = run_cli("evaluate", str(run), *args)
    assert evaluated.exit_code == 0, evaluated.output
    info = served_info(monkeypatch, run)
    recorded = {
        "train": load_checkpoint(run / "checkpoints" / "last.pt")["progress"]["precision"],
        "evaluate": NAMES[json.loads(record.read_text())["decode"]["precision"]],
        "serve": NAMES[info["precision"]],
    }
    assert loaded == [expected] * 3  # translate, evaluate and serve, in that order
    assert recorded == dict.fromkeys(recorded, expected)


@pytest.mark.slow
def test_an_asked_precision_is_not_chosen_for(tiny_run, tmp_path, monkeypatch):
    import seq2seq.translate.translator as translator

    monkeypatch.setattr(translator, "auto_cpu_dtype", lambda: pytest.fail("chosen for an asked precision"))
    src = tmp_path / "src.txt"
    src.write_text("red cat\n", encoding="utf-8")
    for asked in (["--precision", "fp32"], ["--precision", "bf16"], ["--quantize", "int8"]):
        result = run_cli("translate", str(tiny_run.run), "--device", "cpu", "-i", str(src), *asked)
        assert result.exit_code == 0, result.output
