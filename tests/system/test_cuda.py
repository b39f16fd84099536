"""The GPU path, checked on a CUDA GPU (scripts/gpu_check.sh runs it); skipped cleanly without one.

With S2S_GPU_CHECK_DRY_RUN=1 and no GPU visible, the tests that the CPU can stand in for run on the
CPU (the `device` fixture) and those that need CUDA itself skip, so the file cannot rot unseen.
Comparisons are against fp32 on the CPU or the math attention kernel, never against stored numbers.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
import yaml
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.testing import assert_close

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import TrainConfig, config_from_dict
from seq2seq.config.guided_alignment import GuidedAlignmentConfig
from seq2seq.data.parallel import collate
from seq2seq.data.tokenizer import train_or_load_tokenizers
from seq2seq.decoding.batched import decode_ids
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.device import autocast, autocast_dtype, grad_scaler
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loss import TrainingLoss, training_objective
from seq2seq.training.optim import build_optimizer
from tests.conftest import make_model, random_ids, tiny_config_dict
from tests.helpers import run_cli
from tests.system.cuda_helpers import (
    CompileCounter,
    assert_same_beam,
    assert_same_greedy,
    ddp_worker,
    distinct_tokens,
    free_port,
    greedy_margins,
    ieee_fp32,
    relative_error,
    reverse_pairs,
    source_batch,
    step_gradients,
    toy_trainer,
    train_reverser,
)

GPU = torch.cuda.is_available()
DRY_RUN = not GPU and os.environ.get("S2S_GPU_CHECK_DRY_RUN") == "1"
DEVICE = torch.device("cuda" if GPU else "cpu")
CPU = torch.device("cpu")
if GPU:  # cuBLAS reads it when its first handle is made: deterministic products for the resume check
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not (GPU or DRY_RUN), reason="needs a CUDA GPU (S2S_GPU_CHECK_DRY_RUN=1: a dry run on the CPU)"
    ),
]


def cuda_only(what: str) -> pytest.MarkDecorator:
    """Skipped in the dry run (without it, and without a GPU, the whole module is)."""
    return pytest.mark.skipif(DRY_RUN, reason=f"dry run: {what} needs CUDA itself")


@pytest.fixture
def device() -> torch.device:
    """The GPU, or the CPU standing in for it in the dry run."""
    return DEVICE


# ---- precision ------------------------------------------------------------------------------------


# what `precision: auto` must give on the GPUs people train on, by compute capability (NVIDIA's tables)
AUTO_BY_CAPABILITY = {
    (7, 0): torch.float16,  # V100: bf16 emulated only
    (7, 5): torch.float16,  # T4, RTX 20xx
    (8, 0): torch.bfloat16,  # A100
    (8, 6): torch.bfloat16,  # A10, RTX 30xx
    (8, 9): torch.bfloat16,  # L4, L40, RTX 40xx
    (9, 0): torch.bfloat16,  # H100, H200
}


@cuda_only("the GPU's compute capability")
def test_auto_precision_is_what_this_gpu_computes_fastest_in():
    device = torch.device("cuda")
    capability = torch.cuda.get_device_capability(device)
    if "H100" in torch.cuda.get_device_name(device) or "H200" in torch.cuda.get_device_name(device):
        assert capability == (9, 0)
    if capability not in AUTO_BY_CAPABILITY:
        pytest.skip(f"compute capability {capability} is not in the table")
    assert autocast_dtype(device, "auto") is AUTO_BY_CAPABILITY[capability]


LOSS_RTOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}  # measured on the CPU: 3.5e-4 and 3e-5
# ||g - g_fp32|| / ||g_fp32|| over all parameters together, and for the worst single parameter; measured
# on the CPU over 5 seeds: bf16 0.022 / 0.053, fp16 0.0075 / 0.021. A step that lost a gradient term,
# or an fp16 gradient left scaled (x65536), is off by 1 or more.
GRAD_RTOL = {torch.bfloat16: (0.08, 0.25), torch.float16: (0.03, 0.1)}


def loss_and_grads(
    objective: TrainingLoss, batch, dtype: torch.dtype | None
) -> tuple[float, dict[str, Tensor]]:
    """One training forward/backward as the trainer takes it: the summed loss, and the gradients of the
    loss per target token after the grad scaler's unscale (fp16; a pass-through otherwise). A backward
    that overflows fp16 is taken again at the lower scale the scaler then sets, as training would."""
    model, device = objective.model, batch.src.device
    scaler, optimizer = grad_scaler(device, dtype), build_optimizer(model, TrainConfig())
    for _ in range(4):
        model.zero_grad(set_to_none=True)
        with autocast(device, dtype):
            loss = objective(batch.src, batch.tgt_in, batch.tgt_out)
        scaler.scale(loss / batch.num_tgt_tokens).backward()
        scaler.unscale_(optimizer)
        grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
        if all(torch.isfinite(g).all() for g in grads.values()):
            break
        scaler.update()  # an overflow: a smaller scale next time
    if dtype is torch.float16:
        assert scaler.get_scale() > 1  # the gradients really went through a scaled backward
    return float(loss.detach()), grads


@pytest.mark.parametrize(
    "dtype",
    [torch.bfloat16, pytest.param(torch.float16, marks=cuda_only("fp16 autocast with a GradScaler"))],
    ids=["bf16", "fp16"],
)
def test_mixed_precision_training_step_matches_fp32(device, dtype):
    """Losses and gradients of `TrainingLoss` under autocast, against fp32. In eval mode: without
    dropout both passes compute the same function (two train-mode passes draw different masks).
    Attention dispatched as the trainer leaves it (`prefer_safe_attention_kernels`)."""
    from seq2seq.device import prefer_safe_attention_kernels

    prefer_safe_attention_kernels()
    model = make_model(seed=1, vocab=61, d_model=64, heads=4, ffn_dim=128).to(device)  # eval mode
    src, tgt = random_ids(12, 15, vocab=61, seed=1), random_ids(12, 13, vocab=61, seed=2)
    lengths = [2, 15, 7, 11, 3, 15, 9, 5, 13, 4, 8, 6]  # ragged: padding in both sides of the batch
    batch = collate(
        [s[:n].tolist() for s, n in zip(src, lengths, strict=True)],
        [t[: n - 1].tolist() for t, n in zip(tgt, lengths, strict=True)],
    )
    batch = batch.to(device)
    objective = TrainingLoss(model, 0.1)
    with ieee_fp32():
        expected_loss, expected = loss_and_grads(objective, batch, None)
    loss, grads = loss_and_grads(objective, batch, dtype)
    assert abs(loss - expected_loss) <= LOSS_RTOL[dtype] * expected_loss
    whole, worst = GRAD_RTOL[dtype]
    assert (
        relative_error(
            torch.cat([g.flatten() for g in grads.values()]),
            torch.cat([g.flatten() for g in expected.values()]),
        )
        <= whole
    )
    errors = {name: relative_error(grads[name], expected[name]) for name in expected}
    assert max(errors.values()) <= worst, errors


def test_guided_alignment_under_autocast_matches_fp32(device):
    """The guided head computed explicitly beside the fused kernel (which gets the other heads, sliced)
    under bf16 autocast: the loss, the alignment cost and the gradients against fp32."""
    from seq2seq.device import prefer_safe_attention_kernels

    prefer_safe_attention_kernels()
    model = make_model(seed=1, vocab=61, d_model=64, heads=4, ffn_dim=128).to(device)  # eval mode
    lengths = [2, 15, 7, 11, 3, 15, 9, 5, 13, 4, 8, 6]
    src, tgt = random_ids(12, 15, vocab=61, seed=1), random_ids(12, 13, vocab=61, seed=2)
    batch = collate(
        [s[:n].tolist() for s, n in zip(src, lengths, strict=True)],
        [t[: n - 1].tolist() for t, n in zip(tgt, lengths, strict=True)],
    ).to(device)
    links = torch.tensor(  # target piece t linked to source piece t, or in even rows to n - 1 - t
        [[b, t, t if b % 2 else n - 1 - t] for b, n in enumerate(lengths) for t in range(n - 1)],
        device=device,
    )
    cfg = TrainConfig(guided_alignment=GuidedAlignmentConfig(weight=0.5, layer=0))
    objective = training_objective(model, cfg)
    results = []
    for dtype in (None, torch.bfloat16):
        model.zero_grad(set_to_none=True)
        with ieee_fp32() if dtype is None else contextlib.nullcontext(), autocast(device, dtype):
            parts = objective(batch.src, batch.tgt_in, batch.tgt_out, links)
        (parts.sum() / batch.num_tgt_tokens).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results.append((parts.detach(), grads))
    (expected, expected_grads), (got, grads) = results
    assert expected[1] > 0
    assert ((got - expected).abs() <= LOSS_RTOL[torch.bfloat16] * expected).all(), (got, expected)
    assert relative_error(grads, expected_grads) <= GRAD_RTOL[torch.bfloat16][0]


def test_training_uses_the_fused_adamw(device):
    optimizer = build_optimizer(make_model().to(device), TrainConfig())
    assert optimizer.defaults["fused"] is True


# ---- training runs: fit, resume, int8 ---------------------------------------------------------------

STEPS = 8
# A resumed run computes what the straight one did, kernel for kernel: on CUDA with deterministic
# algorithms and the math attention kernel (the flash and memory-efficient backward passes add up in a
# varying order), equal to the last bit, as on the CPU. The tolerance absorbs only an op left without a
# deterministic implementation (its warning is in the failure message); a resume that lost the random,
# optimizer or schedule state is off by more than 1e-4 (seen on the CPU).
LOSS_RESUME_RTOL, WEIGHT_RESUME_ATOL = 1e-5, 1e-5


def train_config(directory: Path, name: str) -> Path:
    """The tiny config (dropout 0.1: the random state matters), STEPS steps, run dir DIRECTORY/NAME."""
    raw = tiny_config_dict(directory, max_steps=STEPS, valid_every=STEPS // 2)
    raw["run_dir"] = str(directory / name)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@contextlib.contextmanager
def reproducible() -> Iterator[list[str]]:
    """Deterministic kernels inside; yields the warnings of ops that have no deterministic version."""
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    notes: list[str] = []
    try:
        with sdpa_kernel([SDPBackend.MATH]), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield notes
        notes.extend(sorted({str(w.message) for w in caught if "determinis" in str(w.message).lower()}))
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def train(config: Path, *args: str) -> None:
    result = run_cli("train", str(config), "--device", DEVICE.type, *args)
    assert result.exit_code == 0, result.output


def train_losses(run: Path) -> dict[int, tuple[float, float]]:
    """Per logged step: (loss, learning rate)."""
    return {r["step"]: (r["train_loss"], r["lr"]) for r in RunDir(run).read_metrics() if r["kind"] == "train"}


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A run trained STEPS steps in one go on the device through `s2s train`, and the warnings of any
    op without a deterministic version it ran."""
    directory = tmp_path_factory.mktemp("straight")
    with reproducible() as notes:
        train(train_config(directory, "run"))
    return directory / "run", notes


def test_training_on_the_device_resumes_exactly(straight_run, tmp_path):
    """`s2s train` on the device for STEPS steps, against STEPS/2 steps and then `--resume`: the same
    losses at every step and the same weights at the end."""
    run, notes = straight_run
    config = train_config(tmp_path, "parts")
    with reproducible() as resumed_notes:
        train(config, "--set", f"train.max_steps={STEPS // 2}")
        train(config, "--resume")
    why = f"ops without a deterministic version: {notes + resumed_notes}"
    expected, got = train_losses(run), train_losses(tmp_path / "parts")
    assert sorted(expected) == list(range(1, STEPS + 1)) and sorted(got) == sorted(expected)
    for step, (loss, lr) in expected.items():
        assert math.isfinite(loss)
        assert math.isclose(got[step][0], loss, rel_tol=LOSS_RESUME_RTOL), f"step {step}: {got[step]}; {why}"
        assert got[step][1] == lr
    weights = load_checkpoint(run / "checkpoints" / "last.pt")["model"]
    resumed = load_checkpoint(tmp_path / "parts" / "checkpoints" / "last.pt")["model"]
    for name, value in weights.items():
        assert_close(
            resumed[name],
            value,
            rtol=0,
            atol=WEIGHT_RESUME_ATOL,
            msg=lambda m, name=name: f"{name}: {m}; {why}",
        )


@cuda_only("refusing int8 on a GPU")
def test_int8_is_refused_on_cuda(straight_run):
    run, _ = straight_run
    result = run_cli("translate", str(run), "--device", "cuda", "--quantize", "int8", input="red cat\n")
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "int8" in result.output and "--device cpu" in result.output


# ---- decoding: a trained model on the device against the CPU -----------------------------------------

SOURCES = reverse_pairs(40, seed=10**6, lengths=(3, 10))[0]  # held out: training draws seeds 0, 1, ...
MARGIN = 1e-3  # a best choice ahead of its runner-up by less than this may flip with fp32 rounding
SCORE_TOLERANCE = 1e-3  # |CPU - GPU| of a sentence's summed log-probabilities, fp32
# bf16: on the CPU its next-token leads differ from fp32's by up to 0.15 and sentence scores by 0.04
BF16_MARGIN, BF16_SCORE_TOLERANCE = 0.5, 0.2
SAYS_DIFFERENT_THINGS = 10  # distinct output tokens, of the 20 the task has (a random model says one)


@pytest.fixture(scope="module")
def reverser() -> torch.nn.Module:
    """A model trained on the device to reverse its input (on the CPU, in eval mode): it chooses with
    clear margins, unlike a random one, so the device's choices can be held to the CPU's."""
    model = train_reverser(DEVICE, steps=400 if GPU else 150)
    settings = SearchSettings(beam=1, max_len_a=1.0, max_len_b=4)
    targets = [s[::-1] for s in SOURCES]
    right = sum(
        h.tokens == t
        for (h,), t in zip(greedy_search(model, source_batch(SOURCES), settings), targets, strict=True)
    )
    assert right >= len(SOURCES) // 3, f"the model did not learn the task: {right} of {len(SOURCES)} right"
    return model


def on_device(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).to(DEVICE)


def test_greedy_search_on_the_device_matches_the_cpu(reverser):
    src, settings = source_batch(SOURCES), SearchSettings(beam=1, max_len_a=1.0, max_len_b=4)
    cpu = greedy_search(reverser, src, settings)
    with ieee_fp32():
        other = greedy_search(on_device(reverser), src.to(DEVICE), settings)
    clear = assert_same_greedy(
        cpu, other, greedy_margins(reverser, src, cpu, settings), MARGIN, SCORE_TOLERANCE
    )
    assert clear >= len(SOURCES) // 2  # most sentences are decided throughout, or this would check little
    assert len(distinct_tokens(other)) >= SAYS_DIFFERENT_THINGS


def test_beam_search_on_the_device_matches_the_cpu(reverser):
    src, settings = source_batch(SOURCES), SearchSettings(beam=4, nbest=2, max_len_a=1.0, max_len_b=4)
    cpu = beam_search(reverser, src, settings)
    with ieee_fp32():
        other = beam_search(on_device(reverser), src.to(DEVICE), settings)
    clear = assert_same_beam(reverser, src, cpu, other, settings, MARGIN, SCORE_TOLERANCE)
    assert clear >= len(SOURCES) // 2
    assert len(distinct_tokens(other)) >= SAYS_DIFFERENT_THINGS


@pytest.mark.parametrize("beam", [1, 4], ids=["greedy", "beam4"])
@pytest.mark.parametrize("dtype", [None, torch.bfloat16], ids=["fp32", "bf16"])
def test_batched_decoding_on_the_device_matches_the_cpu(reverser, dtype, beam):
    """`decode_ids` (what `s2s translate` and validation decode with: length-sorted batches, results
    in input order) on the device in fp32 and bf16, against fp32 on the CPU. Under GNMT's gentle
    length normalization more beam results are greedy's path, which `beam_is_clear` can vouch for
    in bf16 (under `power` 10 of 40 were, in a dry run)."""
    settings = SearchSettings(
        beam=beam, nbest=1 if beam == 1 else 2, max_len_a=1.0, max_len_b=4, length_norm="gnmt"
    )
    cpu = decode_ids(reverser, SOURCES, settings, 120, CPU)
    with ieee_fp32():
        other = decode_ids(on_device(reverser), SOURCES, settings, 120, DEVICE, dtype)
    margin, tolerance = (MARGIN, SCORE_TOLERANCE) if dtype is None else (BF16_MARGIN, BF16_SCORE_TOLERANCE)
    src = source_batch(SOURCES)
    if beam == 1:
        clear = assert_same_greedy(
            cpu, other, greedy_margins(reverser, src, cpu, settings), margin, tolerance
        )
    else:
        clear = assert_same_beam(reverser, src, cpu, other, settings, margin, tolerance)
    assert clear >= len(SOURCES) // 3
    assert len(distinct_tokens(other)) >= SAYS_DIFFERENT_THINGS


@cuda_only("a GPU-resident cache")
def test_decoding_cache_stays_on_the_gpu():
    model = make_model().cuda()
    memory = model.encode(random_ids(2, 6).cuda())
    cache = model.new_cache()
    model.decode(random_ids(2, 1).cuda(), memory, cache)
    assert cache.layers[0].self_kv.k.is_cuda and cache.layers[0].memory_kv.k.is_cuda


# ---- attention kernels ------------------------------------------------------------------------------

MASKS = ["encoder", "cross", "prefix"]
DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
# ||kernel - math in fp64|| / ||math||, for the output and each of dq, dk, dv; on the CPU 2.5e-7 (fp32)
# and 5e-3 (bf16). fp32 leaves room for TF32 inside a kernel (5e-4). A masked position attended to, or
# a NaN, is off by 0.1 to infinity.
SDPA_RTOL = {torch.float32: 2e-3, torch.bfloat16: 3e-2}
FUSED_KERNELS = {
    "flash": (SDPBackend.FLASH_ATTENTION, torch.backends.cuda.flash_sdp_enabled),
    "memory-efficient": (SDPBackend.EFFICIENT_ATTENTION, torch.backends.cuda.mem_efficient_sdp_enabled),
    "cudnn": (SDPBackend.CUDNN_ATTENTION, torch.backends.cuda.cudnn_sdp_enabled),
}


def attention_case(kind: str, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """q (B, H, T, 16), k and v (B, H, S, 16), the boolean mask (True = may attend) of s2s's attention
    `kind`, and which query rows are real (B, T), for 4 sentences of 19, 12, 5 and 1 tokens.

    encoder: self-attention over right-padded sources, (B, 1, 1, S) (padding rows attend to the real
    tokens); cross: decoder rows of other lengths over those sources; prefix: the decoder-only model's
    left-padded source, (B, 1, S, S), where a padding row sees only itself."""
    g = torch.Generator().manual_seed(0)
    lengths = torch.tensor([19, 12, 5, 1])
    width = 19
    real = torch.arange(width) < lengths[:, None]  # (B, S)
    mask, query_real, rows = real[:, None, None, :], real, width
    if kind == "cross":
        rows = 11
        query_real = torch.arange(rows) < torch.tensor([11, 4, 9, 2])[:, None]
    elif kind == "prefix":
        real = torch.arange(width) >= (width - lengths)[:, None]
        mask, query_real = real[:, None, None, :] | torch.eye(width, dtype=torch.bool), real
    q = torch.randn(4, 4, rows, 16, generator=g)
    k, v = torch.randn(4, 4, width, 16, generator=g), torch.randn(4, 4, width, 16, generator=g)
    return tuple(t.to(device) for t in (q, k, v, mask, query_real))


def with_grads(attend, q: Tensor, k: Tensor, v: Tensor, upstream: Tensor) -> list[Tensor]:
    """attend(q, k, v) and the gradients of <output, upstream> for q, k and v."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    out = attend(q, k, v)
    out.backward(upstream.to(out.dtype))
    return [out.detach(), q.grad, k.grad, v.grad]


def sdpa(mask: Tensor):
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def assert_matches_math(got: list[Tensor], expected: list[Tensor], dtype: torch.dtype, what: str) -> None:
    for name, a, b in zip(("output", "dq", "dk", "dv"), got, expected, strict=True):
        error = relative_error(a, b)
        assert error <= SDPA_RTOL[dtype], f"{what}: {name} off by {error:.3g}"


@cuda_only("the fused attention kernels")
@pytest.mark.parametrize("kind", MASKS)
@DTYPES
def test_every_fused_attention_kernel_training_may_take_gets_masked_gradients_right(kind, dtype):
    """After `prefer_safe_attention_kernels` (what the trainer calls on CUDA), every fused kernel still
    on that takes s2s's masked attention gives the math kernel's output and q/k/v gradients. The cuDNN
    kernel has given NaN gradients with explicit masks on Hopper: it must be off, or right."""
    from seq2seq.device import prefer_safe_attention_kernels

    prefer_safe_attention_kernels()
    q, k, v, mask, query_real = attention_case(kind, DEVICE)
    upstream = torch.randn_like(q) * query_real[:, None, :, None]  # the loss never reads padding rows
    with sdpa_kernel([SDPBackend.MATH]):
        expected = with_grads(sdpa(mask), q.double(), k.double(), v.double(), upstream.double())
    compared = []
    for name, (backend, enabled) in FUSED_KERNELS.items():
        if not enabled():
            continue
        try:
            with sdpa_kernel([backend]), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # each kernel that declines says why
                got = with_grads(sdpa(mask), q.to(dtype), k.to(dtype), v.to(dtype), upstream)
        except RuntimeError as e:
            if "No available kernel" not in str(e):
                raise
            continue  # this kernel does not take these inputs, so the dispatch never gives it them
        compared.append(name)
        assert_matches_math(got, expected, dtype, name)
    assert compared, "no fused kernel takes this masked attention: nothing was compared"


@pytest.mark.parametrize("kind", MASKS)
@DTYPES
def test_model_attention_gradients_match_the_math_kernel(device, kind, dtype):
    """The model's own attention (`SelfAttention.attend`, output projection included) under autocast,
    dispatched as training leaves it (`prefer_safe_attention_kernels`), against the math kernel in fp64."""
    from seq2seq.device import prefer_safe_attention_kernels

    prefer_safe_attention_kernels()
    layer = make_model(d_model=64, heads=4).encoder[0].attn.to(device)  # 4 heads of 16, like the case
    q, k, v, mask, query_real = attention_case(kind, device)
    upstream = torch.randn(*query_real.shape, 64, device=device) * query_real[..., None]  # (B, T, D)
    reference = copy.deepcopy(layer).double()
    with sdpa_kernel([SDPBackend.MATH]):
        expected = with_grads(
            lambda q, k, v: reference.attend(q, k, v, mask),
            q.double(),
            k.double(),
            v.double(),
            upstream.double(),
        )

    def attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        with autocast(device, None if dtype is torch.float32 else dtype):
            return layer.attend(q, k, v, mask)

    with ieee_fp32():
        got = with_grads(attend, q, k, v, upstream)
    assert_matches_math(got, expected, dtype, f"{kind} attention")


@cuda_only("the flash kernel")
def test_causal_self_attention_runs_on_the_flash_kernel():
    """The decoder's training path passes no mask (is_causal only), so the flash kernel can run it."""
    device = torch.device("cuda")
    attention = make_model(d_model=64, heads=4).to(device).decoder[0].self_attn
    x = torch.randn(4, 9, 64, device=device)
    with torch.autocast("cuda", dtype=torch.bfloat16), sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = attention(x, causal=True)
    assert out.shape == (4, 9, 64)


# ---- two GPUs -----------------------------------------------------------------------------------------


@cuda_only("NCCL")
@pytest.mark.skipif(GPU and torch.cuda.device_count() < 2, reason="needs two GPUs: NCCL between them")
def test_one_nccl_ddp_step_equals_one_step_on_the_union_of_the_batches(tmp_path):
    """Two processes on two GPUs, one batch each (of different token counts), one DistributedDataParallel
    step: the gradients and weights of one process taking both batches in one step, on each rank."""
    raw = tiny_config_dict(tmp_path, valid_bleu=False, clip_norm=0.0)  # clipping would hide a wrong scale
    raw["model"]["dropout"] = 0.0  # the same arithmetic on both sides of the comparison
    cfg = config_from_dict(raw)
    Path(cfg.run_dir).mkdir()
    tok_dir = tmp_path / "tok"
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tok_dir)
    rows = [list(range(0, 24)), list(range(24, 40))]
    mp.spawn(
        ddp_worker, args=(free_port(), raw, str(tok_dir), rows, str(tmp_path), "cuda"), nprocs=2, join=True
    )
    ranks = [torch.load(tmp_path / f"rank{rank}.pt", weights_only=True) for rank in range(2)]
    single = toy_trainer(cfg, DistInfo(), tok_dir, torch.device("cuda:0"))
    batches = [single.data.batch(r) for r in rows]
    grads = step_gradients(single, batches, sum(b.num_tgt_tokens for b in batches))
    weights = {name: value.cpu() for name, value in single.model.state_dict().items()}
    for name, grad in grads.items():  # fp32 sums in another order: 1e-7 apart; a wrong scale is 0.5 or more
        assert relative_error(ranks[0]["grads"][name], grad) <= 1e-5, name
    for name, value in weights.items():
        assert torch.equal(ranks[0]["weights"][name], ranks[1]["weights"][name]), name
        assert_close(
            ranks[0]["weights"][name], value, atol=2e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}"
        )


# ---- torch.compile (last: its first compile is the slowest test on a GPU) -----------------------------

SHAPES = [(8, 11, 9), (6, 14, 12), (12, 7, 8), (5, 19, 16), (10, 9, 13), (7, 16, 6)]  # (B, S, T)


def test_compiled_training_step_does_not_recompile_for_new_batch_shapes(device):
    """The trainer's `torch.compile(TrainingLoss, dynamic=True)`, forward and backward in the trainer's
    precision, over the ever-changing (B, S, T) of token bucketing: no new graph after the second
    shape. The graphs and their guards are dynamo's and AOT autograd's, so aot_eager shows them
    without inductor's code generation, whose first compile alone took over 60 s on an H200 machine."""
    torch._dynamo.reset()
    counter = CompileCounter("aot_eager")
    model = make_model(encoder_layers=1, decoder_layers=1).train().to(device)
    net = torch.compile(TrainingLoss(model, 0.1), dynamic=True, backend=counter)
    dtype = torch.bfloat16 if GPU else None
    graphs: list[int] = []
    try:
        for rows, src_len, tgt_len in SHAPES:
            src, tgt = random_ids(rows, src_len).to(device), random_ids(rows, tgt_len, seed=1).to(device)
            with autocast(device, dtype):
                loss = net(src, tgt, tgt)
            loss.backward()
            graphs.append(counter.graphs)
            if len(graphs) > 2 and graphs[-1] > graphs[1]:
                break  # a recompile: on a GPU each costs seconds, and one is enough to know
    finally:
        torch._dynamo.reset()
    assert graphs[1] > 0 and graphs == graphs[:2] + [graphs[1]] * (len(SHAPES) - 2), (
        f"graphs by shape: {graphs}"
    )
