"""GPU-only checks: skipped cleanly on machines without CUDA (run by scripts/gpu_check.sh)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from seq2seq.config import TrainConfig
from seq2seq.data.parallel import collate
from seq2seq.decoding.search import (
    Decodable,
    Hypothesis,
    SearchSettings,
    beam_search,
    greedy_search,
    max_output_lengths,
)
from seq2seq.device import autocast, autocast_dtype, resolve_device
from seq2seq.special import BOS, EOS, PAD
from seq2seq.training.loss import TrainingLoss, sequence_loss
from seq2seq.training.optim import build_optimizer
from tests.conftest import make_model, random_ids

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_auto_precision_is_bf16_on_modern_gpus():
    device = resolve_device("auto")
    assert device.type == "cuda"
    expected = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    assert autocast_dtype(device, "auto") is expected


def test_bf16_training_step_with_fused_adamw():
    device = torch.device("cuda")
    model = make_model().train().to(device)
    optimizer = build_optimizer(model, TrainConfig())
    assert optimizer.defaults.get("fused") is True
    batch = collate([[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14]]).to(device)
    with autocast(device, torch.bfloat16):
        loss = TrainingLoss(model, 0.1)(batch.src, batch.tgt_in, batch.tgt_out)
        reference = sequence_loss(model(batch.src, batch.tgt_in), batch.tgt_out, 0.1)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, reference, rtol=1e-2, atol=1e-2)  # chunked = on logits, in bf16


def test_causal_self_attention_runs_on_the_flash_kernel():
    """The decoder's training path passes no mask (is_causal only), so the flash kernel can run it."""
    device = torch.device("cuda")
    attention = make_model(d_model=64, heads=4).to(device).decoder[0].self_attn
    x = torch.randn(4, 9, 64, device=device)
    with torch.autocast("cuda", dtype=torch.bfloat16), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = attention(x, causal=True)
    assert out.shape == (4, 9, 64)


MARGIN = 1e-3  # a best choice ahead of its runner-up by less than this may flip with rounding
SCORE_TOLERANCE = 1e-3  # |CPU - GPU| of a sentence's summed log-probabilities


def test_gpu_beam_search_matches_cpu():
    model = make_model(seed=3)
    src = random_ids(5, 8)
    settings = SearchSettings(beam=4, nbest=1, max_len_a=1.0, max_len_b=4)
    cpu = beam_search(model, src, settings)
    gpu = beam_search(model.cuda(), src.cuda(), settings)
    assert [h[0].tokens for h in cpu] == [h[0].tokens for h in gpu]


def greedy_margins(
    model: Decodable, src: Tensor, hyps: list[list[Hypothesis]], settings: SearchSettings
) -> list[list[float]]:
    """Per sentence of `src` (B, S), the lead of the chosen token over the runner-up at each step of its
    greedy output `hyps` (<eos> included), among the tokens greedy may choose there."""
    limits = max_output_lengths(src, settings, model.max_positions).tolist()
    margins = []
    for row, (hyp,) in enumerate(hyps):
        steps = [*hyp.tokens, EOS][: limits[row]]
        tgt_in = torch.tensor([[BOS, *steps[:-1]]], device=src.device)
        logp = model(src[row : row + 1], tgt_in)[0].float().log_softmax(-1)  # (T, V)
        logp[:, [PAD, BOS]] = -math.inf
        logp[: settings.min_len, EOS] = -math.inf
        top = logp.topk(2, dim=-1).values  # (T, 2)
        lead = (top[:, 0] - top[:, 1]).tolist()
        if len(steps) == limits[row]:
            lead[-1] = math.inf  # at the length limit only </s> may follow: no choice
        margins.append(lead)
    return margins


def assert_same_greedy(model: Decodable, src: Tensor, device: torch.device) -> None:
    """Greedy on `device` gives the CPU's tokens up to the CPU's first close call (a lead under
    MARGIN), and, for a sentence with none, the CPU's score within SCORE_TOLERANCE."""
    settings = SearchSettings(beam=1, max_len_a=1.0, max_len_b=4)
    cpu = greedy_search(model, src, settings)
    margins = greedy_margins(model, src, cpu, settings)
    other = greedy_search(model.to(device), src.to(device), settings)
    clear = 0
    for (ours,), (theirs,), lead in zip(cpu, other, margins):
        decided = next((t for t, gap in enumerate(lead) if gap < MARGIN), len(lead))
        assert [*theirs.tokens, EOS][:decided] == [*ours.tokens, EOS][:decided]
        if decided == len(lead):
            clear += 1
            assert abs(theirs.score - ours.score) <= SCORE_TOLERANCE
    assert clear >= len(cpu) // 2  # most sentences are decided throughout, or this would check little


def test_gpu_greedy_search_matches_cpu():
    assert_same_greedy(make_model(seed=3), random_ids(5, 8), torch.device("cuda"))


def test_decoding_cache_stays_on_the_gpu():
    model = make_model().cuda()
    memory = model.encode(random_ids(2, 6).cuda())
    cache = model.new_cache()
    model.decode(random_ids(2, 1).cuda(), memory, cache)
    assert cache.layers[0].self_kv.k.is_cuda and cache.layers[0].memory_kv.k.is_cuda
