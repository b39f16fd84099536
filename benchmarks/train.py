"""Training throughput of s2s against a plain `nn.Transformer` doing the same step, and model FLOP/s.

Both implementations are trained by `seq2seq.training.trainer.Trainer.train_step` (autocast forward,
label-smoothed loss, backward, gradient clipping, AdamW and schedule step), so only the model and the
batching differ: s2s gets the trainer's length-bucketed token batches, the reference gets consecutive
sentences of a random order (`reference.py`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from benchmarks.options import Options
from benchmarks.reference import ReferenceTransformer
from benchmarks.tables import format_table
from seq2seq.batching import token_batches
from seq2seq.config import Config, ModelConfig, load_config
from seq2seq.data.parallel import Batch, JoinedCorpus, ParallelData
from seq2seq.data.prepared import ensure_prepared_corpus, load_prepared, prepared_corpus_dir
from seq2seq.data.tokenizer import (
    PAD,
    TokenizerPair,
    load_tokenizers,
    tokenizer_checksums,
    train_or_load_tokenizers,
)
from seq2seq.device import autocast_dtype, cpu_has_bf16_kernels
from seq2seq.models.build import Model, build_model
from seq2seq.models.encoder_decoder import count_parameters
from seq2seq.run.checks import data_checksums
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.shapes import BatchShapes
from seq2seq.training.trainer import Trainer
from seq2seq.training.validation import ValidSet

log = logging.getLogger(__name__)

Pairs = ParallelData | JoinedCorpus  # the prepared corpus: one, or several joined

BASE_SIZES: dict[str, Any] = {"d_model": 512, "heads": 8, "ffn_dim": 2048}
BASE_SIZES |= {"encoder_layers": 6, "decoder_layers": 6}
REFERENCE, FIXED = "nn.Transformer", "s2s fixed shapes"  # the baseline, and s2s compiled at fixed shapes
DTYPE_NAMES = {None: "fp32", torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
FLOP_FORMULA = (
    "6 x [(N_enc + N_kv) x S + (N_dec + D x V) x T]"
    " + 12 x D x sum_i [L_enc x S_i^2 + L_dec x (T_i^2 + T_i x S_i)] (real tokens only)"
)


@dataclass
class TrainResult:
    """Throughput of one model over the timed window (warm-up steps excluded)."""

    model: str  # recipe | base
    impl: str  # s2s | nn.Transformer | s2s fixed shapes
    dtype: str
    params: int
    steps: int
    seconds: float
    sentences_per_batch: float
    padded_tokens_per_batch: float  # sentences x longest cost, the measure token_batches budgets
    padding: float  # share of source + target positions that are padding
    tgt_tokens_per_s: float
    src_tgt_tokens_per_s: float
    flop_per_s: float
    utilization: float  # flop_per_s / measured matmul FLOP/s of the same dtype


def load_corpus(cfg: Config, run_dir: str | None, scratch: Path) -> tuple[TokenizerPair, Pairs]:
    """The recipe's training pairs, tokenized by the run's tokenizer or one trained into `scratch`."""
    d = cfg.data
    tok_dir = RunDir(run_dir).tokenizer_dir if run_dir is not None else scratch
    if run_dir is None:
        train_or_load_tokenizers(cfg.tokenizer, d.training_corpora(), tok_dir)
    tokenizers = load_tokenizers(tok_dir, cfg.tokenizer.joint)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(d, prepared_dir=str(scratch.parent / "prepared")))
    tokenizer_sums = tokenizer_checksums(tok_dir, cfg.tokenizer.joint)
    ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), tokenizer_sums)
    return tokenizers, load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())


def model_config(cfg: ModelConfig, name: str) -> ModelConfig:
    """The recipe's model, or the 6+6-layer base sizes with the recipe's other settings."""
    return cfg if name == "recipe" else dataclasses.replace(cfg, **BASE_SIZES)


def bucketed_batches(
    data: Pairs, max_tokens: int, seed: int, count: int, shapes: BatchShapes | None = None
) -> list[np.ndarray]:
    """The first `count` batches the trainer takes: `token_batches`, epoch after epoch (of the lengths
    rounded as `shapes` rounds them)."""
    costs = data.costs() if shapes is None else shapes.costs(data.costs())
    batches: list[np.ndarray] = []
    epoch = 0
    while len(batches) < count:
        batches += token_batches(costs, max_tokens, seed, epoch)
        epoch += 1
    return batches[:count]


def sentence_batches(data: Pairs, max_tokens: int, seed: int, count: int) -> list[list[int]]:
    """Unbucketed batches: consecutive sentences of a random order, a fixed number per batch.

    The number is the largest whose batches average at most `max_tokens` padded tokens.
    """
    costs = data.costs().tolist()
    order = list(range(len(data)))
    random.Random(seed).shuffle(order)

    def chunks(size: int) -> list[list[int]]:
        return [order[i : i + size] for i in range(0, len(order) - size + 1, size)]

    def mean_padded(size: int) -> float:
        batches = chunks(size)
        return sum(size * max(costs[i] for i in b) for b in batches) / len(batches)

    lo, hi = 1, len(order)
    while lo < hi:  # mean_padded grows with size
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if mean_padded(mid) <= max_tokens else (lo, mid - 1)
    batches = chunks(lo)
    return (batches * math.ceil(count / len(batches)))[:count]


def train_flops(cfg: ModelConfig, tgt_vocab: int, batch: Batch) -> float:
    """Training FLOPs of one batch: forward + backward = 3 x forward, one multiply-add = 2 FLOPs.

        dense     = 6 x [(N_enc + N_kv) x S + (N_dec + D x V) x T]
        attention = 12 x D x sum_i [L_enc x S_i^2 + L_dec x (T_i^2 + T_i x S_i)]

    S_i, T_i are the real (non-padding) source and target lengths of sentence i, S and T their sums:
    padding is not useful work. Weights are counted where tokens pass through them:
    N_enc = L_enc (4 D^2 + 2 D F) per source token, N_kv = L_dec 2 D^2 (cross-attention keys and
    values of the memory) per source token, N_dec = L_dec (6 D^2 + 2 D F) per target token, and the
    output projection D x V per target token. Attention is QK^T plus AV (4 Tq Tk D forward); causal
    self-attention is counted in full. Biases, norms, embeddings and softmax are left out.
    """
    d, f = cfg.d_model, cfg.ffn_dim
    src_len = (batch.src != PAD).sum(1).double()  # (B,)
    tgt_len = (batch.tgt_out != PAD).sum(1).double()  # (B,)
    per_src = cfg.encoder_layers * (4 * d * d + 2 * d * f) + cfg.decoder_layers * 2 * d * d
    per_tgt = cfg.decoder_layers * (6 * d * d + 2 * d * f) + d * tgt_vocab
    dense = 6 * (per_src * src_len.sum() + per_tgt * tgt_len.sum())
    quad = cfg.encoder_layers * src_len**2 + cfg.decoder_layers * (tgt_len**2 + tgt_len * src_len)
    return float(dense + 12 * d * quad.sum())


def matmul_flop_per_s(size: int, dtype: torch.dtype, device: torch.device, min_seconds: float = 1.0) -> float:
    """FLOP/s of a square (size x size) `torch.matmul` in `dtype`, repeated for at least `min_seconds`.

    The device is synchronized once per block of repetitions, so a GPU queue never runs dry.
    """
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    torch.matmul(a, b)
    _sync(device)
    block = 1 if device.type == "cpu" else 10
    reps, start = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - start < min_seconds:
        for _ in range(block):
            torch.matmul(a, b)
        reps += block
        _sync(device)
    return 2 * size**3 * reps / (time.perf_counter() - start)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(trainer: Trainer, batches: list[Batch], warmup: int) -> float:
    """Seconds the trainer takes for the optimizer steps after the first `warmup`, one batch each.

    A compiled trainer at fixed shapes first takes one step of each shape the timed window holds, so
    the window times steps, not compilations."""
    if trainer.tcfg.compile and trainer.tcfg.shape_multiple:
        firsts = {tuple(b.src.shape): b for b in batches[warmup:]}
        batches = list(firsts.values()) + batches
        warmup += len(firsts)
    start = time.perf_counter()
    for i, batch in enumerate(batches):
        if i == warmup:
            _sync(trainer.device)
            start = time.perf_counter()
        loss = trainer.train_step([batch])
    loss.tolist()  # waits for the device
    return time.perf_counter() - start


def make_trainer(
    cfg: Config, model: nn.Module, tokenizers: TokenizerPair, device: torch.device, run: Path
) -> Trainer:
    """A trainer for `model` with no data of its own: only its `train_step` is used."""
    no_valid = [ValidSet(ParallelData.from_lists([], []), [], [])]
    # nn.Transformer's baseline is no s2s model, but the step calls only what both have (forward)
    trained, nothing = cast(Model, model), ParallelData.from_lists([], [])
    return Trainer(cfg, RunDir(run), trained, tokenizers, {}, nothing, no_valid, DistInfo(), device)


@dataclass(frozen=True)
class Setup:
    """What every measured model shares."""

    tokenizers: TokenizerPair
    warmup: int
    device: torch.device
    peaks: dict[str, float]  # matmul FLOP/s by dtype name
    scratch: Path  # an empty directory the trainers may treat as their run directory


def bench_model(cfg: Config, name: str, impl: str, batches: list[Batch], setup: Setup) -> TrainResult:
    """Train implementation `impl` of `cfg.model` on `batches`; measure the steps after the warm-up."""
    vocab = (setup.tokenizers.src.vocab_size, setup.tokenizers.tgt.vocab_size)
    torch.manual_seed(cfg.train.seed)
    model = build_model(cfg.model, *vocab) if impl != REFERENCE else ReferenceTransformer(cfg.model, *vocab)
    trainer = make_trainer(cfg, model, setup.tokenizers, setup.device, setup.scratch)
    seconds = time_steps(trainer, batches, setup.warmup)
    timed = batches[setup.warmup :]
    src = sum(b.num_src_tokens for b in timed)
    tgt = sum(b.num_tgt_tokens for b in timed)
    positions = sum(b.src.numel() + b.tgt_out.numel() for b in timed)
    flop_per_s = sum(train_flops(cfg.model, vocab[1], b) for b in timed) / seconds
    dtype = DTYPE_NAMES[trainer.dtype]
    return TrainResult(
        model=name,
        impl=impl,
        dtype=dtype,
        params=count_parameters(model),
        steps=len(timed),
        seconds=round(seconds, 3),
        sentences_per_batch=round(sum(b.src.size(0) for b in timed) / len(timed), 1),
        padded_tokens_per_batch=round(sum(b.src.size(0) * _longest(b) for b in timed) / len(timed), 1),
        padding=round(1 - (src + tgt) / positions, 4),
        tgt_tokens_per_s=round(tgt / seconds, 1),
        src_tgt_tokens_per_s=round((src + tgt) / seconds, 1),
        flop_per_s=round(flop_per_s),
        utilization=round(flop_per_s / setup.peaks[dtype], 4),
    )


def _longest(batch: Batch) -> int:
    """The longest `ParallelData.costs` entry in the batch: source + <eos> or <bos> + target."""
    return max(batch.src.size(1), batch.tgt_out.size(1))


def measure_peaks(size: int, device: torch.device, train_dtype: torch.dtype | None) -> dict[str, float]:
    """Matmul FLOP/s in fp32, bf16 and the training dtype, by dtype name.

    Not bf16 on a CPU without bf16 kernels (an AVX2-only CPU), where it runs ~30x slower than fp32.
    """
    bf16 = [torch.bfloat16] if device.type != "cpu" or cpu_has_bf16_kernels() else []
    dtypes = dict.fromkeys([torch.float32, *bf16, train_dtype or torch.float32])
    return {DTYPE_NAMES[d]: round(matmul_flop_per_s(size, d, device)) for d in dtypes}


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Matmul peaks, then s2s and nn.Transformer for each model; everything as plain data."""
    cfg = load_config(opts.config)
    peaks = measure_peaks(opts.matmul_size, device, autocast_dtype(device, cfg.train.precision))
    t, count = cfg.train, opts.warmup + opts.steps
    results: list[TrainResult] = []
    with tempfile.TemporaryDirectory() as scratch:
        tokenizers, data = load_corpus(cfg, opts.run_dir, Path(scratch) / "tokenizer")
        batch_sets: dict[str, list[np.ndarray] | list[list[int]]] = {
            "s2s": bucketed_batches(data, t.max_tokens, t.seed, count),
            REFERENCE: sentence_batches(data, t.max_tokens, t.seed, count),
        }
        fixed = BatchShapes(opts.shape_multiple, t.max_tokens)
        if fixed.multiple:
            batch_sets[FIXED] = bucketed_batches(data, t.max_tokens, t.seed, count, fixed)
        setup = Setup(tokenizers, opts.warmup, device, peaks, Path(scratch))
        for name in opts.models:
            model_cfg = dataclasses.replace(cfg, model=model_config(cfg.model, name))
            for impl, indices in batch_sets.items():
                log.info("training the %s model with %s for %d steps", name, impl, count)
                batches = [data.batch(b) for b in indices]
                impl_cfg = model_cfg
                if impl == FIXED:  # compiled, one graph (a CUDA graph on a GPU) per shape
                    batches = [fixed.fit(b) for b in batches]
                    impl_cfg = dataclasses.replace(
                        model_cfg, train=dataclasses.replace(t, compile=True, shape_multiple=fixed.multiple)
                    )
                results.append(bench_model(impl_cfg, name, impl, batches, setup))
    return {
        "sentences": len(data),
        "matmul_size": opts.matmul_size,
        "matmul_flop_per_s": peaks,
        "results": [dataclasses.asdict(r) for r in results],
        "s2s_over_reference_tgt_tokens_per_s": _ratios(results),
        "flop_formula": FLOP_FORMULA,
    }


def _ratios(results: list[TrainResult]) -> dict[str, float]:
    """s2s / nn.Transformer target tokens per second, per model."""
    rate = {(r.model, r.impl): r.tgt_tokens_per_s for r in results}
    models = dict.fromkeys(r.model for r in results)
    return {m: round(rate[m, "s2s"] / rate[m, REFERENCE], 3) for m in models}


def _row(r: dict[str, Any]) -> list[str]:
    return [
        r["model"],
        r["impl"],
        r["dtype"],
        f"{r['params'] / 1e6:.1f}M",
        f"{r['sentences_per_batch']:.1f}",
        f"{r['padded_tokens_per_batch']:.0f}",
        f"{100 * r['padding']:.1f}",
        f"{r['tgt_tokens_per_s']:.0f}",
        f"{r['src_tgt_tokens_per_s']:.0f}",
        f"{r['flop_per_s'] / 1e9:.1f}",
        f"{100 * r['utilization']:.1f}",
    ]


def report(section: dict[str, Any]) -> str:
    """The train table, the matmul peaks and the s2s / nn.Transformer ratios."""
    header = ["model", "impl", "dtype", "params", "sent/batch", "tok/batch", "pad%", "tgt tok/s"]
    header += ["src+tgt tok/s", "GFLOP/s", "util%"]
    size = section["matmul_size"]
    peaks = ", ".join(f"{k} {v / 1e9:.1f}" for k, v in section["matmul_flop_per_s"].items())
    ratios = ", ".join(f"{k} {v:.2f}x" for k, v in section["s2s_over_reference_tgt_tokens_per_s"].items())
    return "\n".join(
        [
            f"== train ({section['sentences']} sentences; util% = model FLOP/s / matmul FLOP/s, same dtype)",
            format_table(header, [_row(r) for r in section["results"]], left=3),
            f"matmul {size}x{size} GFLOP/s: {peaks}",
            f"s2s / nn.Transformer tgt tok/s: {ratios}",
        ]
    )
