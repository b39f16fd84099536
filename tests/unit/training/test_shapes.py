"""Fixed batch shapes (train.shape_multiple): an epoch's batches take a few shapes, each compiled once,
and the padding and filler rows that make them change nothing the model learns."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

from seq2seq.config import TrainConfig, config_from_dict
from seq2seq.data.parallel import Batch
from seq2seq.errors import ConfigError
from seq2seq.special import PAD
from seq2seq.training import shapes
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loss import StepLoss
from seq2seq.training.order import BatchOrder
from seq2seq.training.shapes import BatchShapes
from seq2seq.training.state import Progress
from tests.conftest import make_model, tiny_config_dict
from tests.unit.training.test_order import random_pairs

MULTIPLE, MAX_TOKENS = 8, 200  # random_pairs: pairs up to 30 pieces, so lengths 8, 16, 24 and 32


def epoch_batches(cfg: TrainConfig, world: int = 1) -> list[tuple[Batch, Batch]]:
    """Every batch of the first epoch on every rank, as training builds it and without fixed shapes."""
    data = random_pairs(301)
    out = []
    for rank in range(world):
        order = BatchOrder(data.costs(), data.target_tokens(), cfg, DistInfo(rank, world, rank))
        at = Progress()
        while at.epoch == 0:
            step = order.next_step(at)
            out += zip(step.build(data), [data.batch(b) for b in step.batches], strict=True)
    return out


@pytest.mark.parametrize("world", [1, 3])
def test_an_epoch_takes_one_shape_per_length_and_keeps_every_example(world):
    cfg = TrainConfig(max_tokens=MAX_TOKENS, seed=3, shape_multiple=MULTIPLE)
    batches = epoch_batches(cfg, world)
    seen = set()
    for fitted, plain in batches:
        rows, length = fitted.src.shape
        assert length % MULTIPLE == 0 and rows == MAX_TOKENS // length, fitted.src.shape
        assert fitted.tgt_in.shape == fitted.tgt_out.shape == (rows, length)
        assert rows * length <= MAX_TOKENS
        n, s, t = len(plain.src), plain.src.shape[1], plain.tgt_in.shape[1]
        assert torch.equal(fitted.src[:n, :s], plain.src) and (fitted.src[:n, s:] == PAD).all()
        assert torch.equal(fitted.tgt_out[:n, :t], plain.tgt_out) and (fitted.tgt_out[:n, t:] == PAD).all()
        assert (fitted.tgt_out[n:] == PAD).all()  # filler rows: nothing to predict
        assert fitted.num_tgt_tokens == plain.num_tgt_tokens
        seen.add(fitted.src.shape)
    assert len(seen) <= 32 // MULTIPLE
    plain_shapes = {
        (p.src.shape, p.tgt_in.shape) for _, p in epoch_batches(TrainConfig(max_tokens=MAX_TOKENS))
    }
    assert len(plain_shapes) > 4 * len(seen)  # what the fixed shapes save a compiler from


def test_every_example_is_in_exactly_one_batch_with_fixed_shapes():
    data = random_pairs(301)
    cfg = TrainConfig(max_tokens=MAX_TOKENS, seed=3, shape_multiple=MULTIPLE)
    order = BatchOrder(data.costs(), data.target_tokens(), cfg, DistInfo())
    assert sorted(np.concatenate(order.batches(0)).tolist()) == list(range(len(data)))


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_padding_and_filler_rows_change_neither_the_loss_nor_the_gradients(arch):
    data = random_pairs(40, seed=1)
    plain = data.batch(np.arange(5))
    fitted = BatchShapes(MULTIPLE, MAX_TOKENS).fit(plain)
    assert len(fitted.src) > len(plain.src) and fitted.src.shape[1] > plain.src.shape[1]
    model = make_model(vocab=50, arch=arch, dropout=0.0).train()  # the same arithmetic both times
    losses, grads = [], []
    for batch in (plain, fitted):
        model.zero_grad()
        loss = StepLoss(model, 0.1)(batch.src, batch.tgt_in, batch.tgt_out)[0]
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-5)
    assert grads[0].keys() == grads[1].keys()
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.slow  # dynamo traces each shape's graph: about 10 s on 2 cores
def test_a_compiled_step_compiles_each_shape_once_over_an_epoch():
    """Specialized graphs (`dynamic=False`, what `compiled` asks for with fixed shapes), counted by
    dynamo over an epoch's batches: graphs are added only at a shape's first batch."""
    cfg = TrainConfig(max_tokens=MAX_TOKENS, seed=3, shape_multiple=MULTIPLE)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    model = make_model(vocab=50, encoder_layers=1, decoder_layers=1).train()
    net = torch.compile(StepLoss(model, 0.1), dynamic=False, backend=counter)
    seen: set[torch.Size] = set()
    try:
        for fitted, _ in epoch_batches(cfg):
            before = counter.frame_count
            net(fitted.src, fitted.tgt_in, fitted.tgt_out).sum().backward()
            new = fitted.src.shape not in seen
            assert (counter.frame_count > before) == new, f"shape {tuple(fitted.src.shape)}"
            seen.add(fitted.src.shape)
    finally:
        torch._dynamo.reset()
    assert 1 < len(seen) <= 4


def test_compile_is_specialized_and_graphed_only_with_fixed_shapes(monkeypatch):
    asked: list[dict] = []
    monkeypatch.setattr(torch, "compile", lambda net, **kwargs: asked.append(kwargs) or net)
    net, cpu, cuda = torch.nn.Linear(2, 2), torch.device("cpu"), torch.device("cuda")
    assert shapes.compiled(net, TrainConfig(), cpu, False) is net and not asked
    for cfg, device, parallel, expected in [
        (TrainConfig(compile=True), cuda, False, {"dynamic": True}),
        (TrainConfig(compile=True, shape_multiple=8), cpu, False, {"dynamic": False, "mode": None}),
        (
            TrainConfig(compile=True, shape_multiple=8),
            cuda,
            False,
            {"dynamic": False, "mode": "reduce-overhead"},
        ),
        (TrainConfig(compile=True, shape_multiple=8), cuda, True, {"dynamic": False, "mode": None}),
    ]:
        shapes.compiled(net, cfg, device, parallel)
        assert asked.pop() == expected
        assert shapes.uses_cuda_graphs(cfg, device, parallel) == (expected.get("mode") == "reduce-overhead")


def test_a_classifier_is_refused_fixed_shapes_and_a_tagger_is_not(tmp_path):
    raw = tiny_config_dict(tmp_path, shape_multiple=8)
    raw["model"] |= {"arch": "encoder_only", "task": "classify"}
    raw["train"] |= {"best_metric": "accuracy"}
    with pytest.raises(ConfigError, match="train.shape_multiple: a classifier's target is one label"):
        config_from_dict(raw)
    raw["model"]["task"] = "tag"
    assert config_from_dict(raw).train.shape_multiple == 8
