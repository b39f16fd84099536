"""Learning-rate schedules and the weight average: shapes and closed forms, not stored numbers."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
import torch
from torch import nn

from seq2seq.config import TrainConfig
from seq2seq.training.optim import WeightAverage, build_optimizer, build_scheduler, lr_factor
from tests.conftest import make_model

SCHEDULES = ["inverse_sqrt", "linear", "cosine", "constant"]


def config(**overrides: object) -> TrainConfig:
    return TrainConfig(**{"lr": 1e-3, "warmup_steps": 10, "max_steps": 100, "min_lr": 1e-4, **overrides})


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_warmup_rises_linearly_to_the_peak_at_warmup_steps(schedule):
    factor = lr_factor(config(schedule=schedule))
    assert [factor(s) for s in range(1, 11)] == pytest.approx([s / 10 for s in range(1, 11)])
    assert factor(10) == 1.0 and all(factor(s) <= 1.0 for s in range(11, 200))


@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant"])
def test_no_warmup_starts_at_the_peak(schedule):
    assert lr_factor(config(schedule=schedule, warmup_steps=0))(1) == 1.0


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_rate_never_goes_below_min_lr(schedule):
    factor = lr_factor(config(schedule=schedule, warmup_steps=3, max_steps=20))
    assert min(factor(s) for s in range(4, 1000)) >= 0.1 - 1e-12


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_linear_and_cosine_reach_min_lr_at_max_steps_and_stay(schedule):
    factor = lr_factor(config(schedule=schedule))
    decaying = [factor(s) for s in range(10, 101)]
    assert all(a >= b for a, b in pairwise(decaying))
    assert factor(100) == pytest.approx(0.1) and factor(500) == pytest.approx(0.1)


def test_cosine_is_halfway_at_the_middle_of_the_decay():
    factor = lr_factor(config(schedule="cosine", warmup_steps=10, max_steps=110, min_lr=0.0))
    assert factor(60) == pytest.approx(0.5) and factor(35) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))


def test_constant_is_constant_and_inverse_sqrt_halves_at_four_times_the_warmup():
    assert {lr_factor(config(schedule="constant", min_lr=0.0))(s) for s in range(10, 500)} == {1.0}
    assert lr_factor(config(schedule="inverse_sqrt", min_lr=0.0))(40) == pytest.approx(0.5)


def test_each_optimizer_step_uses_the_rate_of_its_own_step_number():
    """Step 1 uses factor(1), step 2 factor(2): no step runs twice at the same warm-up rate."""
    cfg = config(schedule="linear")
    model = nn.Linear(2, 2)
    optimizer = build_optimizer(model, cfg)
    scheduler = build_scheduler(optimizer, cfg)
    used = []
    for _ in range(12):
        used.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    factor = lr_factor(cfg)
    assert used == pytest.approx([cfg.lr * factor(s) for s in range(1, 13)])


def average_after(model: nn.Module, start: torch.Tensor, decay: float, updates: int) -> torch.Tensor:
    with torch.no_grad():
        model.weight.copy_(start)
    average = WeightAverage(model, decay)
    with torch.no_grad():
        model.weight.fill_(1.0)
    for _ in range(updates):
        average.update(model)
    return average.shadow["weight"]


def test_the_average_follows_its_closed_form():
    """From average a0 toward fixed weights w: a_k = w + (a0 - w) * prod_t d_t, d_t = min(d, (1+t)/(10+t))."""
    model = nn.Linear(3, 3, bias=False)
    start = torch.full((3, 3), -1.0)
    decay, k = 0.999, 25
    expected = 1.0 + (-1.0 - 1.0) * math.prod(min(decay, (1 + t) / (10 + t)) for t in range(k))
    assert torch.allclose(average_after(model, start, decay, k), torch.full((3, 3), expected), atol=1e-6)


def test_warmup_makes_the_early_average_track_the_model():
    """After 20 updates a plain 0.999 average would still be 98% the start; with the warm-up it is not."""
    model = nn.Linear(3, 3, bias=False)
    average = average_after(model, torch.zeros(3, 3), 0.999, 20)
    assert float(average.mean()) > 0.6


def test_the_update_count_survives_save_and_load():
    model = nn.Linear(3, 3, bias=False)
    average = WeightAverage(model, 0.99)
    for _ in range(7):
        average.update(model)
    restored = WeightAverage(model, 0.99)
    restored.load_state_dict(average.state_dict())
    assert restored.updates == 7


TORCH_VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


@pytest.mark.skipif(TORCH_VERSION < (2, 4), reason="fused AdamW on CPU needs torch 2.4")
def test_optimizer_uses_the_fused_kernel_where_available():
    optimizer = build_optimizer(make_model(), TrainConfig())
    assert optimizer.defaults["betas"] == (0.9, 0.98)
    assert optimizer.defaults.get("fused") is True  # torch >= 2.4 supports fused AdamW on CPU
