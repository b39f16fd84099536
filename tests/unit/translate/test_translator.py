"""The translator's precision: bf16 weights cast (and packed) once at load, not autocast at every step."""

from __future__ import annotations

import torch
from torch import nn

from seq2seq.data.textio import read_lines
from seq2seq.models.packed import can_pack
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun


def test_bf16_weights_are_cast_once_and_decode_without_autocast(tiny_run: TrainedRun, monkeypatch):
    """Every parameter is bf16 after loading; decoding runs no autocast region (which would cast the
    weights again at every step) and gives the lines autocast gives wherever both are sure."""
    bf16 = Translator.load(tiny_run.run, ["best"], Placement("cpu", "bf16"))
    assert bf16.weights_cast and {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    if can_pack(bf16.device, torch.bfloat16):  # and laid out once for oneDNN (models.packed)
        assert not any(type(m) is nn.Linear for m in bf16.model.modules())
    lines = read_lines(tiny_run.data / "valid.src")
    settings = bf16.options(DecodeOverrides(beam=1)).search
    entered = []
    real = torch.autocast
    monkeypatch.setattr(torch, "autocast", lambda *a, **k: entered.append(k) or real(*a, **k))
    cast = bf16.translate(lines, Request(settings, 200))
    assert entered == []
    autocast = Translator.load(tiny_run.run, ["best"], Placement("cpu", "fp32"))
    autocast.dtype = torch.bfloat16  # the same model, bf16 through autocast
    other = autocast.translate(lines, Request(settings, 200))
    assert entered  # the comparison did run under autocast
    same = sum(a.texts == b.texts for a, b in zip(cast, other, strict=True))
    assert len(cast) == len(lines) and same >= len(lines) // 2, f"{same} of {len(lines)} lines agree"


def test_fp32_keeps_fp32_weights(tiny_run: TrainedRun):
    fp32 = Translator.load(tiny_run.run, ["best"], Placement("cpu", "fp32"))
    assert not fp32.weights_cast and {p.dtype for p in fp32.model.parameters()} == {torch.float32}
