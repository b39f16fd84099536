import contextlib
import math
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close
from torch.utils._python_dispatch import TorchDispatchMode

from seq2seq.config import TrainConfig
from seq2seq.config.guided_alignment import GuidedAlignmentConfig
from seq2seq.data.parallel import collate
from seq2seq.data.tokenizer import PAD
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.training.loss import (
    TrainingLoss,
    alignment_cost,
    linear_cross_entropy,
    sequence_loss,
    training_objective,
)
from tests.conftest import make_model, random_ids

VOCAB = 17


def batch():
    return collate([[5, 6], [7]], [[8, 9, 10, 11], [12]])


def test_loss_ignores_padding():
    b = batch()
    logits = torch.randn(*b.tgt_out.shape, VOCAB)
    noisy = logits.clone()
    pad = b.tgt_out == PAD
    noisy[pad] = torch.randn_like(noisy[pad]) * 10
    assert_close(sequence_loss(logits, b.tgt_out, 0.1), sequence_loss(noisy, b.tgt_out, 0.1))


def test_no_smoothing_equals_plain_cross_entropy_over_real_tokens():
    b = batch()
    logits = torch.randn(*b.tgt_out.shape, VOCAB)
    real = b.tgt_out != PAD
    expected = F.cross_entropy(logits[real], b.tgt_out[real], reduction="sum")
    assert_close(sequence_loss(logits, b.tgt_out, 0.0), expected)


def test_smoothing_penalizes_overconfidence():
    b = batch()
    confident = F.one_hot(b.tgt_out, VOCAB).float() * 50
    assert sequence_loss(confident, b.tgt_out, 0.0) < sequence_loss(confident, b.tgt_out, 0.1)


def projection_case(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hidden states (3, 7, 16), an output projection (VOCAB, 16), targets with padding."""
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(3, 7, 16, generator=g, requires_grad=True)
    weight = torch.randn(VOCAB, 16, generator=g, requires_grad=True)
    targets = torch.randint(1, VOCAB, (3, 7), generator=g)
    targets[0, 4:], targets[2, 1:] = PAD, PAD
    return hidden, weight, targets


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("chunk_rows", [1, 4, 21, 1000])
def test_chunked_projection_loss_and_gradients_equal_the_loss_on_logits(smoothing, chunk_rows):
    hidden, weight, targets = projection_case()
    expected = sequence_loss(hidden @ weight.t(), targets, smoothing)
    want = torch.autograd.grad(0.5 * expected, (hidden, weight))
    loss = linear_cross_entropy(hidden, weight, targets, smoothing, chunk_rows)
    got = torch.autograd.grad(0.5 * loss, (hidden, weight))
    assert_close(loss, expected)
    assert_close(got, want)
    assert torch.all(got[0][targets == PAD] == 0)  # padding positions get no gradient


def test_chunked_projection_loss_without_gradients_and_under_bf16_autocast():
    hidden, weight, targets = projection_case(seed=1)
    expected = sequence_loss(hidden @ weight.t(), targets, 0.1)
    with torch.no_grad():
        assert_close(linear_cross_entropy(hidden, weight, targets, 0.1, 5), expected)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = linear_cross_entropy(hidden, weight, targets, 0.1, 5)
        reference = sequence_loss(F.linear(hidden, weight), targets, 0.1)  # what nn.Linear would do
    assert_close(loss, reference)
    grads = torch.autograd.grad(loss, (hidden, weight))
    assert [g.dtype for g in grads] == [torch.float32, torch.float32]
    assert_close(grads, torch.autograd.grad(expected, (hidden, weight)), atol=0.05, rtol=0.05)


class MatmulCount(TorchDispatchMode):
    """Counts the matrix products run inside it."""

    PRODUCTS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default}

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func in self.PRODUCTS
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("grad_mode", ["no_grad", "no input needs a gradient"])
def test_the_loss_without_gradients_runs_one_matmul_per_chunk(grad_mode):
    """Validation's loss (under no_grad) computes no gradient: one product per chunk, not three."""
    hidden, weight, targets = projection_case()
    if grad_mode == "no input needs a gradient":
        hidden, weight, mode = hidden.detach(), weight.detach(), contextlib.nullcontext()
    else:
        mode = torch.no_grad()
    with mode, MatmulCount() as products:
        linear_cross_entropy(hidden, weight, targets, 0.1, chunk_rows=5)
    assert products.count == math.ceil(targets.numel() / 5)


def test_the_loss_with_gradients_works_them_out_in_the_same_pass():
    hidden, weight, targets = projection_case()
    with MatmulCount() as products:
        loss = linear_cross_entropy(hidden, weight, targets, 0.1, chunk_rows=5)
    assert products.count == 3 * math.ceil(targets.numel() / 5)
    assert loss.requires_grad


@pytest.mark.slow
def test_compiled_training_loss_compiles_once_for_every_batch_shape():
    """Token bucketing changes (B, T) at almost every step: `torch.compile(dynamic=True)` must not
    specialize on it (the chunk loop once made Dynamo compile anew for each shape)."""
    graphs = []

    def counting_backend(graph: torch.fx.GraphModule, inputs: list) -> Callable:
        graphs.append(graph)
        return graph.forward  # run what Dynamo captured, as captured

    torch._dynamo.reset()
    model = make_model(encoder_layers=1, decoder_layers=1).train()
    compiled = torch.compile(TrainingLoss(model, 0.1), dynamic=True, backend=counting_backend)
    counts = []
    for rows, length in [(4, 7), (6, 9), (3, 12), (8, 5), (5, 11), (7, 6)]:
        src, tgt = random_ids(rows, length + 1), random_ids(rows, length)
        compiled(src, tgt, tgt).backward()
        counts.append(len(graphs))
    torch._dynamo.reset()
    assert counts[-1] == counts[0] >= 1, counts


def test_the_alignment_cost_is_marians_cross_entropy_over_linked_rows_only():
    attention = torch.softmax(torch.randn(2, 3, 4), -1)  # (B, T, S)
    links = torch.tensor([[0, 0, 1], [0, 0, 3], [1, 2, 0]])  # row 0 target 0 -> sources 1 and 3, ...
    eps = 1e-6
    expected = -(0.5 * math.log(attention[0, 0, 1] + eps) + 0.5 * math.log(attention[0, 0, 3] + eps))
    expected -= math.log(attention[1, 2, 0] + eps)
    assert_close(alignment_cost(attention, links), torch.tensor(expected, dtype=torch.float32))
    unlinked = attention.clone()
    unlinked[0, 1:], unlinked[1, :2] = torch.rand(2, 4), torch.rand(2, 4)  # rows without a link
    assert_close(alignment_cost(unlinked, links), alignment_cost(attention, links))
    assert alignment_cost(attention, links[:0]) == 0


def objective_case(guided: float) -> tuple[torch.nn.Module, Seq2SeqTransformer, tuple[torch.Tensor, ...]]:
    model = make_model().train()
    cfg = TrainConfig(label_smoothing=0.1, guided_alignment=GuidedAlignmentConfig(weight=guided))
    src, tgt = random_ids(2, 7), random_ids(2, 5, seed=1)
    links = torch.tensor([[0, 0, 2], [1, 3, 0]])
    return training_objective(model, cfg), model, (src, tgt[:, :-1], tgt[:, 1:], links)


def gradients(model: torch.nn.Module) -> list[torch.Tensor]:
    return [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]


def test_without_guidance_the_objective_is_the_training_loss_bit_for_bit():
    objective, model, (src, tgt_in, tgt_out, links) = objective_case(0.0)
    torch.manual_seed(5)
    parts = objective(src, tgt_in, tgt_out, links)
    parts.sum().backward()
    ours = gradients(model)
    model.zero_grad()
    torch.manual_seed(5)
    plain = TrainingLoss(model, 0.1)(src, tgt_in, tgt_out)  # what the trainer minimized before guidance
    plain.backward()
    assert torch.equal(parts, torch.stack([plain.detach(), torch.zeros(())]))
    assert all(torch.equal(a, b) for a, b in zip(ours, gradients(model), strict=True))


def test_with_guidance_the_objective_adds_the_weighted_cost_of_its_head():
    objective, model, (src, tgt_in, tgt_out, links) = objective_case(0.5)
    model.eval()
    loss, cost = objective(src, tgt_in, tgt_out, links)
    assert_close(loss, TrainingLoss(model, 0.1)(src, tgt_in, tgt_out), atol=1e-5, rtol=1e-6)
    head = model.guided_features(src, tgt_in, 1)[1]  # the last layer's, by default
    assert_close(cost, 0.5 * alignment_cost(head, links))
    assert objective(src, tgt_in, tgt_out, None)[1] == 0  # a batch of modified pairs only
