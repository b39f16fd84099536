"""What test_cuda.py compares with: a model trained on a toy task, decoding results checked against the
CPU's where the CPU's choices were clear, exact fp32, relative errors, a compile counter and the
worker of a two-process training step."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import torch
from torch import Tensor

from seq2seq.batching import pad
from seq2seq.config import Config, config_from_dict
from seq2seq.data.parallel import ParallelData, collate, read_parallel
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.decoding.decodable import Decodable
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.search import greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.build import build_model
from seq2seq.run.layout import RunDir
from seq2seq.special import BOS, EOS, PAD
from seq2seq.training.distributed import DistInfo, init_distributed, shutdown, torchrun_info, training_device
from seq2seq.training.loss import TrainingLoss
from seq2seq.training.trainer import Trainer
from seq2seq.training.validation import ValidSet
from tests.conftest import make_model

REVERSE_VOCAB = 24  # ids 4..23: twenty symbols


@contextlib.contextmanager
def ieee_fp32() -> Iterator[None]:
    """fp32 matrix products in full fp32 (no TF32) inside, whatever the process chose before."""
    # s2s never turns TF32 on; this holds the comparison to full fp32 whatever ran before. The per-backend
    # setting (torch >= 2.9): torch refuses a mix with the legacy `allow_tf32 = True`, which nothing here sets
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    matmul.fp32_precision = "ieee"
    try:
        yield
    finally:
        matmul.fp32_precision = before


def relative_error(got: Tensor, expected: Tensor) -> float:
    """||got - expected|| / ||expected||, in float64 (inf if `got` holds a NaN or inf)."""
    got, expected = got.double(), expected.double()
    if not torch.isfinite(got).all():
        return math.inf
    return float((got - expected).norm() / expected.norm().clamp_min(1e-30))


def reverse_pairs(count: int, seed: int, lengths: tuple[int, int] = (3, 9)) -> tuple[list, list]:
    """`count` random id sequences of the given length range, and each one reversed."""
    rng = random.Random(seed)
    sources = [[rng.randrange(4, REVERSE_VOCAB) for _ in range(rng.randint(*lengths))] for _ in range(count)]
    return sources, [s[::-1] for s in sources]


def train_reverser(device: torch.device, steps: int) -> torch.nn.Module:
    """A small encoder-decoder trained on `device` to reverse its input (AdamW on `TrainingLoss`, fresh
    batches of 64 each step); returned on the CPU in eval mode."""
    model = make_model(seed=0, vocab=REVERSE_VOCAB, d_model=64, heads=4, ffn_dim=128, dropout=0.0)
    model.train().to(device)
    objective = TrainingLoss(model, 0.0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    for step in range(steps):
        batch = collate(*reverse_pairs(64, seed=step)).to(device)
        optimizer.zero_grad(set_to_none=True)
        (objective(batch.src, batch.tgt_in, batch.tgt_out) / batch.num_tgt_tokens).backward()
        optimizer.step()
    return model.cpu().eval()


def source_batch(sources: Sequence[Sequence[int]]) -> Tensor:
    """(B, S) ids: each source with its <eos>, right-padded."""
    return pad([[*s, EOS] for s in sources])


def greedy_margins(
    model: Decodable, src: Tensor, hyps: list[list[Hypothesis]], settings: SearchSettings
) -> list[list[float]]:
    """Per sentence of `src` (B, S), the lead of the chosen token over the runner-up at each step of its
    greedy output `hyps` (<eos> included), among the tokens greedy may choose there."""
    limits = max_output_lengths(src, settings, model.max_positions).tolist()
    margins = []
    for row, (hyp, *_) in enumerate(hyps):
        steps = [*hyp.tokens, EOS][: limits[row]]
        tgt_in = torch.tensor([[BOS, *steps[:-1]]], device=src.device)
        with torch.no_grad():
            logp = model(src[row : row + 1], tgt_in)[0].float().log_softmax(-1)  # (T, V)
        logp[:, [PAD, BOS]] = -math.inf
        logp[: settings.min_len, EOS] = -math.inf
        top = logp.topk(2, dim=-1).values  # (T, 2)
        lead = (top[:, 0] - top[:, 1]).tolist()
        if len(steps) == limits[row]:
            lead[-1] = math.inf  # at the length limit only </s> may follow: no choice
        margins.append(lead)
    return margins


def assert_same_greedy(
    cpu: list[list[Hypothesis]],
    other: list[list[Hypothesis]],
    margins: list[list[float]],
    margin: float,
    tolerance: float,
) -> int:
    """`other` (greedy on the device) gives the CPU's tokens `cpu` up to the CPU's first close call
    (a lead under `margin`), and, for a sentence with none, the CPU's score within `tolerance`.
    Returns how many sentences had no close call."""
    clear = 0
    for row, ((ours, *_), (theirs, *_), lead) in enumerate(zip(cpu, other, margins, strict=True)):
        decided = next((t for t, gap in enumerate(lead) if gap < margin), len(lead))
        assert [*theirs.tokens, EOS][:decided] == [*ours.tokens, EOS][:decided], f"sentence {row}"
        if decided == len(lead):
            clear += 1
            assert abs(theirs.score - ours.score) <= tolerance, f"sentence {row}: {theirs.score} {ours.score}"
    return clear


def beam_is_clear(nbest: list[Hypothesis], greedy: Hypothesis, lead: list[float], margin: float) -> bool:
    """Whether no rounding can change a beam search's best hypothesis: it is greedy's, every greedy
    choice on its way led by `margin` (so it never risked being pruned), and it beats the runner-up
    hypothesis by `margin`."""
    best = nbest[0]
    ahead = len(nbest) < 2 or best.score - nbest[1].score >= margin
    return best.tokens == greedy.tokens and min(lead) >= margin and ahead


def assert_same_beam(
    model: Decodable,
    src: Tensor,
    cpu: list[list[Hypothesis]],
    other: list[list[Hypothesis]],
    settings: SearchSettings,
    margin: float,
    tolerance: float,
) -> int:
    """For each sentence of `src` whose CPU beam result `cpu` is clear (`beam_is_clear`), `other` has
    the same best tokens and its score within `tolerance`. Returns how many sentences were clear."""
    greedy_settings = dataclasses.replace(settings, beam=1, nbest=1)
    greedy = greedy_search(model, src, greedy_settings)
    margins = greedy_margins(model, src, greedy, greedy_settings)
    clear = 0
    for row, (ours, theirs, (path,), lead) in enumerate(zip(cpu, other, greedy, margins, strict=True)):
        if not beam_is_clear(ours, path, lead, margin):
            continue
        clear += 1
        assert theirs[0].tokens == ours[0].tokens, f"sentence {row}"
        assert abs(theirs[0].score - ours[0].score) <= tolerance, f"sentence {row}"
    return clear


def distinct_tokens(hyps: list[list[Hypothesis]]) -> set[int]:
    return {t for nbest in hyps for h in nbest for t in h.tokens}


class CompileCounter:
    """A `torch.compile` backend that counts the graphs it is given and hands each to `backend`."""

    def __init__(self, backend: str) -> None:
        self.inner: Callable = torch._dynamo.lookup_backend(backend)
        self.graphs = 0

    def __call__(self, graph: torch.fx.GraphModule, inputs: list) -> Callable:
        self.graphs += 1
        return self.inner(graph, inputs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toy_trainer(cfg: Config, info: DistInfo, tok_dir: Path, device: torch.device) -> Trainer:
    """A trainer of `cfg`'s model (weights from the seed: the same in every process) on its training
    corpus, tokenized with the tokenizers in `tok_dir`; no validation set."""
    tokenizers = load_tokenizers(tok_dir, cfg.tokenizer.joint)
    src, tgt = read_parallel(cfg.data.train_src[0], cfg.data.train_tgt[0])  # the tiny config has one pair
    data = ParallelData.from_lists(tokenizers.src.encode(src), tokenizers.tgt.encode(tgt))
    torch.manual_seed(cfg.train.seed)
    model = build_model(cfg.model, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size)
    valid = [ValidSet(data, [], [])]
    return Trainer(cfg, RunDir(cfg.run_dir), model, tokenizers, {}, data, valid, info, device)


def step_gradients(trainer: Trainer, batches: list, total_tokens: int) -> dict[str, Tensor]:
    """One `train_step` on `batches` in exact fp32; returns the gradients it handed the optimizer (after
    DistributedDataParallel's all-reduce), on the CPU, by parameter name."""
    names = {id(p): name for name, p in trainer.model.named_parameters()}
    grads: dict[str, Tensor] = {}

    def capture(optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        for group in optimizer.param_groups:
            grads.update({names[id(p)]: p.grad.detach().cpu().clone() for p in group["params"]})

    hook = trainer.state.optimizer.register_step_pre_hook(capture)
    try:
        with ieee_fp32():
            trainer.train_step(batches, total_tokens)
    finally:
        hook.remove()
    return grads


def ddp_worker(
    rank: int, port: int, raw: dict, tok_dir: str, rows: list[list[int]], out: str, device_name: str
) -> None:
    """Rank `rank` of len(rows) processes, as torchrun starts them: one training step on the examples
    `rows[rank]`, normalized by the target tokens of every rank's examples. Saves the gradients of the
    step and the weights after it to OUT/rank{rank}.pt. `device_name` cuda (NCCL) or cpu (gloo)."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(len(rows)),
        LOCAL_RANK=str(rank),
    )
    torch.set_num_threads(1)
    info = torchrun_info()
    device = training_device(device_name, info)
    init_distributed(info, device)
    try:
        trainer = toy_trainer(config_from_dict(raw), info, Path(tok_dir), device)
        batches = [trainer.data.batch(r) for r in rows]
        grads = step_gradients(trainer, [batches[rank]], sum(b.num_tgt_tokens for b in batches))
        weights = {name: value.cpu() for name, value in trainer.model.state_dict().items()}
        torch.save({"grads": grads, "weights": weights}, Path(out) / f"rank{rank}.pt")
    finally:
        shutdown(info)
