import pytest
import torch
from torch.testing import assert_close

from seq2seq.models.layers import Dropout
from seq2seq.special import BOS, PAD
from tests.conftest import make_model, random_ids


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_causal_mask_hides_the_future(norm):
    model = make_model(norm=norm)
    src, tgt = random_ids(2, 7), random_ids(2, 6, seed=1)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % 19 + 4
    a, b = model(src, tgt), model(src, changed)
    assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_source_padding_changes_nothing():
    model = make_model()
    src, tgt = random_ids(2, 7), random_ids(2, 5, seed=1)
    padded = torch.cat([src, torch.full((2, 4), PAD)], dim=1)
    assert_close(model(src, tgt), model(padded, tgt))


def test_target_padding_changes_nothing_for_real_positions():
    model = make_model()
    src, tgt = random_ids(2, 7), random_ids(2, 5, seed=1)
    padded = torch.cat([tgt, torch.full((2, 3), PAD)], dim=1)
    assert_close(model(src, tgt), model(src, padded)[:, :5])


def test_batch_invariance():
    model = make_model()
    src = random_ids(3, 8)
    src[1, 5:] = PAD
    src[2, 3:] = PAD
    tgt = random_ids(3, 6, seed=2)
    tgt[2, 4:] = PAD
    together = model(src, tgt)
    for i in range(3):
        s, t = src[i : i + 1], tgt[i : i + 1]
        s = s[:, : int((s != PAD).sum())]
        real_t = int((t != PAD).sum())
        alone = model(s, t[:, :real_t])
        assert_close(together[i : i + 1, :real_t], alone, atol=1e-5, rtol=1e-4)


def test_shared_embeddings_are_one_tensor():
    model = make_model()
    assert model.src_embed.tokens.weight is model.tgt_embed.tokens.weight
    assert model.output.weight is model.tgt_embed.tokens.weight
    names = {n for n, _ in model.named_parameters()}
    assert "output.weight" not in names  # counted once


def test_untied_embeddings_are_separate():
    model = make_model(share_all_embeddings=False, tie_output=False)
    assert model.src_embed.tokens.weight is not model.tgt_embed.tokens.weight
    assert model.output.weight is not model.tgt_embed.tokens.weight
    tied_output = make_model(share_all_embeddings=False, tie_output=True)
    assert tied_output.output.weight is tied_output.tgt_embed.tokens.weight


def test_tied_gradient_is_the_sum_of_what_each_use_contributes():
    """One Parameter serves the source and target embeddings and the output layer; its gradient is
    what the same weights, held as three untied copies, receive together."""
    tied = make_model()
    weight = tied.tgt_embed.tokens.weight
    assert tied.src_embed.tokens.weight is weight and tied.output.weight is weight
    untied = make_model(share_all_embeddings=False, tie_output=False)
    untied.load_state_dict(tied.state_dict())  # the same values, in three tensors
    src, tgt = random_ids(2, 5), random_ids(2, 4, seed=3)
    for model in (tied, untied):
        model(src, tgt).sum().backward()
    uses = (untied.src_embed.tokens.weight, untied.tgt_embed.tokens.weight, untied.output.weight)
    assert all(use.grad is not None and use.grad.abs().sum() > 0 for use in uses)  # each use counts
    assert_close(weight.grad, sum(use.grad for use in uses))


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_incremental_decoding_equals_full_forward(norm):
    model = make_model(norm=norm)
    src = random_ids(3, 9)
    src[1, 6:] = PAD
    tgt = torch.cat([torch.full((3, 1), BOS), random_ids(3, 7, seed=4)], dim=1)
    memory = model.encode(src)
    full = model.decode(tgt, memory)  # (B, T, V)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, cache) for t in range(tgt.size(1))]
    assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-4)
    assert cache.length == tgt.size(1)


def test_incremental_decoding_with_a_multi_token_prefix():
    model = make_model()
    src, tgt = random_ids(2, 6), random_ids(2, 8, seed=5)
    memory = model.encode(src)
    cache = model.new_cache()
    first = model.decode(tgt[:, :5], memory, cache)
    rest = [model.decode(tgt[:, t : t + 1], memory, cache) for t in range(5, 8)]
    assert_close(torch.cat([first, *rest], dim=1), model.decode(tgt, memory), atol=1e-5, rtol=1e-4)


def test_cache_reorder_selects_rows():
    model = make_model()
    src, tgt = random_ids(3, 6), random_ids(3, 4, seed=6)
    memory = model.encode(src)
    cache = model.new_cache()
    model.decode(tgt[:, :3], memory, cache)
    rows = torch.tensor([2, 0])
    cache.reorder(rows, rows)
    step = model.decode(tgt[rows, 3:4], memory.select(rows), cache)
    assert_close(step, model.decode(tgt[rows], memory.select(rows))[:, 3:4], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("use_cache", [True, False])
def test_beams_sharing_one_memory_row_decode_as_with_a_copy_each(use_cache):
    """Beam search passes one memory row per sentence for its K consecutive target rows."""
    model, beams = make_model(), 3
    src, tgt = random_ids(2, 6), random_ids(2 * beams, 4, seed=8)
    shared = model.encode(src)
    copied = shared.select(torch.arange(2).repeat_interleave(beams))
    shared_cache, copied_cache = (model.new_cache(), model.new_cache()) if use_cache else (None, None)
    steps = [tgt[:, t : t + 1] for t in range(4)] if use_cache else [tgt]
    for step in steps:
        assert_close(
            model.decode(step, shared, shared_cache),
            model.decode(step, copied, copied_cache),
            atol=1e-5,
            rtol=1e-4,
        )
    if use_cache:  # reordering beams within their sentences leaves the shared memory as it is
        rows = torch.tensor([2, 0, 1, 3, 3, 5])
        shared_cache.reorder(rows, None)
        copied_cache.reorder(rows, rows)
        nxt = random_ids(2 * beams, 1, seed=9)
        assert_close(
            model.decode(nxt, shared, shared_cache),
            model.decode(nxt, copied, copied_cache),
            atol=1e-5,
            rtol=1e-4,
        )


def test_cross_attention_memory_projected_once_per_batch(monkeypatch):
    model = make_model()
    src, tgt = random_ids(2, 6), random_ids(2, 5, seed=7)
    calls = []
    for layer in model.decoder:
        layer.cross_attn.kv.register_forward_hook(lambda *args: calls.append(1))
    memory = model.encode(src)
    cache = model.new_cache()
    for t in range(5):
        model.decode(tgt[:, t : t + 1], memory, cache)
    assert len(calls) == len(model.decoder)


def test_attention_weights_rows_sum_to_one_over_real_source_tokens():
    model = make_model()
    src = random_ids(2, 7)
    src[1, 4:] = PAD
    tgt = random_ids(2, 5, seed=8)
    sink: list[torch.Tensor] = []
    model.decode(tgt, model.encode(src), attn_sink=sink)
    assert len(sink) == len(model.decoder)
    weights = sink[-1]  # (B, T, S)
    assert weights.shape == (2, 5, 7)
    assert_close(weights.sum(-1), torch.ones(2, 5))
    assert torch.all(weights[1, :, 4:] == 0)


def test_int8_linear_layers_stay_close_to_fp32():
    """Dynamic int8 quantization changes the next-token log-probabilities only slightly."""
    import copy

    from torch import nn

    from seq2seq.translate.translator import quantize_model

    model = make_model(seed=5)
    quantized = quantize_model(copy.deepcopy(model), "int8", torch.device("cpu"))
    assert not any(type(m) is nn.Linear for m in quantized.modules())
    src, tgt = random_ids(3, 7, seed=1), random_ids(3, 5, seed=2)
    exact = model(src, tgt).log_softmax(-1)
    approx = quantized(src, tgt).log_softmax(-1)
    assert (exact - approx).abs().mean() < 0.05
    assert (exact.argmax(-1) == approx.argmax(-1)).float().mean() > 0.9


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
def test_dropout_drops_a_p_share_and_scales_the_rest(p):
    drop = Dropout(p).train()
    x = torch.rand(200, 500) + 0.5  # no zeros of its own
    x.requires_grad_(True)
    y = drop(x)
    kept = y != 0
    share = kept.float().mean().item()
    assert abs(share - (1 - p)) < 5 * (p * (1 - p) / x.numel()) ** 0.5  # 5 standard deviations
    assert_close(y[kept], x[kept] / (1 - p))
    y.backward(torch.full_like(y, 3.0))  # the gradient flows through exactly the kept values
    assert_close(x.grad, kept.float() * 3.0 / (1 - p))


def test_dropout_is_seeded_and_off_in_eval():
    drop, x = Dropout(0.3), torch.rand(50, 40)
    torch.manual_seed(7)
    a = drop.train()(x)
    torch.manual_seed(7)
    assert torch.equal(a, drop(x))
    assert not torch.equal(a, drop(x))  # the next draw is a new mask
    assert drop.eval()(x) is x


@pytest.mark.parametrize("layer", [0, 1])
def test_guided_features_are_the_features_and_hand_out_that_layers_first_head(layer):
    src, tgt = random_ids(2, 7), random_ids(2, 5, seed=1)
    src[1, 5:] = PAD
    model = make_model()
    hidden, weights = model.guided_features(src, tgt, layer)
    assert_close(hidden, model.features(src, tgt), atol=1e-6, rtol=1e-5)
    assert weights.shape == (2, 5, 7)
    one_head = make_model(heads=1)  # its head 0 is the mean over its heads, which the sink gives
    sink: list[torch.Tensor] = []
    one_head.decode(tgt, one_head.encode(src), attn_sink=sink)
    assert_close(one_head.guided_features(src, tgt, layer)[1], sink[layer])
