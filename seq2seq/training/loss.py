"""Label-smoothed cross-entropy over real (non-padding) target tokens, and guided alignment's cost.

`sequence_loss` states the loss on logits. Training and validation compute the same number with
`linear_cross_entropy`, which folds the output projection into the loss and works through the
tokens in chunks: the (tokens, vocabulary) logits, their log-probabilities and their gradient,
three of the largest tensors of a training step, never exist whole.

What the trainer minimizes is `training_objective`'s: that loss and, with train.guided_alignment,
Marian's guided-alignment cost of one cross-attention head (`alignment_cost`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seq2seq.config import TrainConfig
from seq2seq.data.links import reference_attention
from seq2seq.models.build import Model
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.special import PAD

CHUNK_BYTES = 32 * 2**20  # fp32 logits of one chunk of tokens
ALIGNMENT_EPS = 1e-6  # Marian's: the log stays finite where the head gives a linked source no weight


def sequence_loss(logits: Tensor, targets: Tensor, label_smoothing: float = 0.0) -> Tensor:
    """Summed label-smoothed cross-entropy of logits (B, T, V) against targets (B, T); PAD ignored.

    The caller divides by the number of real target tokens (summed over accumulated batches and
    processes), so every token weighs the same however the work is split.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        targets.reshape(-1),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


@torch.compiler.disable  # the chunk count follows the batch's shape: compiled, it would recompile per shape
def linear_cross_entropy(
    hidden: Tensor, weight: Tensor, targets: Tensor, label_smoothing: float = 0.0, chunk_rows: int = 0
) -> Tensor:
    """`sequence_loss(hidden @ weight.T, targets, label_smoothing)` without the whole logits.

    hidden (B, T, D) are the states the output projection `weight` (V, D) reads. Under autocast
    the projection runs in the autocast dtype, as `nn.Linear` would; the softmax runs in fp32.
    `chunk_rows` tokens at a time (default: 32 MB of fp32 logits).

    Under `torch.compile` the model before it is compiled and this loss runs eagerly (a loop over
    chunks whose count is the batch's tokens would make the compiler specialize on every batch
    shape). Where no gradient is wanted (`no_grad`, validation) only the loss is computed.
    """
    rows = chunk_rows or max(CHUNK_BYTES // (4 * weight.size(0)), 1)
    if torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad):
        return _LinearCrossEntropy.apply(hidden, weight, targets, label_smoothing, rows)
    return _chunked_loss(hidden, weight, targets, label_smoothing, rows, with_grads=False)[0]


def projection(hidden: Tensor, output: nn.Linear) -> tuple[Tensor, Tensor]:
    """`hidden` (B, T, D) and the output projection's weight as `linear_cross_entropy` takes them; a
    bias (`model.logits_bias`) joins the weight as one more column, read by a constant 1 in `hidden`."""
    if output.bias is None:
        return hidden, output.weight
    ones = hidden.new_ones(*hidden.shape[:-1], 1)  # (B, T, 1)
    return torch.cat([hidden, ones], dim=-1), torch.cat([output.weight, output.bias[:, None]], dim=1)


def _chunked_loss(
    hidden: Tensor, weight: Tensor, targets: Tensor, smoothing: float, rows: int, with_grads: bool
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """The summed loss and, `with_grads`, its gradients for `hidden` and `weight`, chunk by chunk.

    The gradient of label-smoothed cross-entropy for the logits is `softmax - q`, q being the
    smoothed one-hot target (zero on padding), so each chunk's logits turn into their gradient in
    place and are multiplied out at once: what is kept is (B, T, D) + (V, D), never (B, T, V).
    """
    flat = hidden.reshape(-1, hidden.size(-1))  # (N, D)
    flat_targets = targets.reshape(-1)  # (N,)
    grad_hidden = torch.empty_like(flat) if with_grads else None
    grad_weight = torch.zeros_like(weight, dtype=torch.float32) if with_grads else None
    total = torch.zeros((), dtype=torch.float32, device=hidden.device)
    vocab = weight.size(0)
    for start in range(0, flat.size(0), rows):
        h, t = flat[start : start + rows], flat_targets[start : start + rows]  # (n, D), (n,)
        real = (t != PAD).unsqueeze(1)  # (n, 1)
        logp = F.linear(h, weight).float().log_softmax(-1)  # (n, V)
        picked = logp.gather(1, t.unsqueeze(1))  # (n, 1)
        nll = -((1 - smoothing) * picked + (smoothing / vocab) * logp.sum(1, keepdim=True))
        total += nll.masked_fill(~real, 0).sum()
        if grad_hidden is None or grad_weight is None:  # not `with_grads`
            continue
        grad = logp.exp_().sub_(smoothing / vocab)  # (n, V): softmax - q, without q's one-hot part
        grad.scatter_add_(1, t.unsqueeze(1), torch.full_like(picked, smoothing - 1))
        grad.masked_fill_(~real, 0)
        grad_hidden[start : start + rows] = torch.mm(grad, weight.to(grad.dtype)).to(flat.dtype)
        grad_weight += torch.mm(grad.t(), h.to(grad.dtype)).float()
    return total, (grad_hidden.view_as(hidden) if grad_hidden is not None else None), grad_weight


class _LinearCrossEntropy(torch.autograd.Function):
    """The loss, with its gradients computed in the same pass over each chunk (`_chunked_loss`)."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, targets: Tensor, smoothing: float, rows: int) -> Tensor:
        total, grad_hidden, grad_weight = _chunked_loss(
            hidden, weight, targets, smoothing, rows, with_grads=True
        )
        ctx.weight_dtype = weight.dtype
        ctx.save_for_backward(grad_hidden, grad_weight)
        return total

    @staticmethod
    def backward(ctx, grad_total: Tensor) -> tuple[Tensor | None, ...]:
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad_total, (grad_weight * grad_total).to(ctx.weight_dtype), None, None, None


class TrainingLoss(nn.Module):
    """The model and its loss as one module: (src, tgt_in, tgt_out) -> summed label-smoothed loss.

    Training wraps this module, not the bare model, in DistributedDataParallel and torch.compile,
    so the whole training forward, output projection and loss included, is theirs.
    """

    def __init__(self, model: Model, label_smoothing: float) -> None:
        super().__init__()
        self.model, self.label_smoothing = model, label_smoothing

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        hidden = self.model.features(src, tgt_in)  # (B, T, D)
        return linear_cross_entropy(*projection(hidden, self.model.output), tgt_out, self.label_smoothing)


def alignment_cost(attention: Tensor, links: Tensor) -> Tensor:
    """Marian's 'ce' guided-alignment cost, summed (the caller divides by the real target tokens):
    -sum over target rows t with a link of sum_s A_ref[t, s] log(A[t, s] + eps).

    attention (B, T, S) the guided head's weights; links (L, 3) the batch's reference links
    (`seq2seq.data.links`), each row of A_ref spread evenly over its linked source positions.
    """
    reference = reference_attention(links, (attention.size(0), attention.size(1), attention.size(2)))
    return -(reference * torch.log(attention.float() + ALIGNMENT_EPS)).sum()


class StepLoss(TrainingLoss):
    """`TrainingLoss` as the trainer takes it, without guidance: (2,) its loss, and an alignment cost of 0.

    The model runs its fused attention as it always did; the links a batch may carry are not read.
    """

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, links: Tensor | None = None) -> Tensor:
        loss = super().forward(src, tgt_in, tgt_out)
        return torch.stack([loss, torch.zeros_like(loss)])


class GuidedLoss(nn.Module):
    """The label-smoothed loss and `weight` x the guided-alignment cost of head 0 of decoder layer
    `layer` (from 0): (src, tgt_in, tgt_out, links) -> (2,) both summed. A batch without links (all its
    pairs modified by augmentation) costs 0."""

    def __init__(self, model: Seq2SeqTransformer, label_smoothing: float, weight: float, layer: int) -> None:
        super().__init__()
        self.model, self.label_smoothing, self.weight, self.layer = model, label_smoothing, weight, layer

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, links: Tensor | None = None) -> Tensor:
        hidden, attention = self.model.guided_features(src, tgt_in, self.layer)  # (B, T, D), (B, T, S)
        loss = linear_cross_entropy(*projection(hidden, self.model.output), tgt_out, self.label_smoothing)
        cost = alignment_cost(attention, links) if links is not None else attention.new_zeros(())
        return torch.stack([loss, self.weight * cost])


def training_objective(model: Model, cfg: TrainConfig) -> StepLoss | GuidedLoss:
    """What the trainer minimizes (and DDP and torch.compile wrap), chosen once from train.guided_alignment:
    (src, tgt_in, tgt_out, links) -> (2,) the summed label-smoothed loss and alignment cost."""
    guide = cfg.guided_alignment
    if not guide.active:
        return StepLoss(model, cfg.label_smoothing)
    assert isinstance(model, Seq2SeqTransformer), "the config's rules allow encoder-decoders only"
    return GuidedLoss(model, cfg.label_smoothing, guide.weight, guide.layer_index(len(model.decoder)))
