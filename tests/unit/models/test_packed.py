"""Linear layers packed for oneDNN compute what the plain bf16 layers compute, in every model family."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from seq2seq.decoding.search import greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.packed import PackedLinear, can_pack, pack_linear_layers
from seq2seq.special import BOS
from tests.conftest import make_model, random_ids
from tests.system.cuda_helpers import assert_same_greedy, greedy_margins

pytestmark = pytest.mark.skipif(
    not can_pack(torch.device("cpu"), torch.bfloat16), reason="this torch or CPU has no oneDNN bf16 kernels"
)

BF16 = {"atol": 2e-2, "rtol": 2e-2}  # two bf16 kernels' roundings of one product (logits of order 1)
MARGIN, SCORE_TOLERANCE = 0.05, 0.05  # a closer call may flip between two bf16 roundings


def bf16_pair(**overrides: object) -> tuple[nn.Module, nn.Module]:
    plain = make_model(vocab=61, **overrides)
    with torch.no_grad():  # trained biases are not zero, as they start
        for linear in (m for m in plain.modules() if type(m) is nn.Linear and m.bias is not None):
            linear.bias.normal_(0.0, 0.5)
    plain = plain.to(torch.bfloat16)
    packed = copy.deepcopy(plain)
    pack_linear_layers(packed)
    return plain, packed


def test_every_linear_layer_is_packed_and_the_tied_embedding_stays():
    plain, packed = bf16_pair()
    linears = sum(type(m) is nn.Linear for m in plain.modules())
    assert linears > 0 and sum(type(m) is PackedLinear for m in packed.modules()) == linears
    assert not any(type(m) is nn.Linear for m in packed.modules())
    assert packed.tgt_embed.tokens.weight.dtype == torch.bfloat16  # the output's tied weight, still plain


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_teacher_forced_logits_match_the_plain_layers(norm):
    plain, packed = bf16_pair(norm=norm, share_all_embeddings=False, tie_output=False)
    src, tgt = random_ids(3, 9, vocab=61), random_ids(3, 7, vocab=61, seed=1)
    with torch.no_grad():
        assert_close(packed(src, tgt).float(), plain(src, tgt).float(), **BF16)


@pytest.mark.parametrize("activation", ["swish", "gelu"])
def test_an_imported_models_options_match_the_plain_layers(activation):
    """MarianMT's options (`s2s import`): an activation outside the kernel, the output's bias."""
    plain, packed = bf16_pair(
        norm="post",
        activation=activation,
        positions="concatenated",
        logits_bias=True,
        share_all_embeddings=False,
    )
    src, tgt = random_ids(3, 9, vocab=61), random_ids(3, 7, vocab=61, seed=1)
    with torch.no_grad():
        assert_close(packed(src, tgt).float(), plain(src, tgt).float(), **BF16)


def test_cached_steps_match_the_plain_layers():
    """The decoder step (one new row per sentence, several shapes as rows leave) as well as the
    teacher-forced pass: the packed weight serves any number of rows."""
    plain, packed = bf16_pair()
    src = random_ids(5, 8, vocab=61)
    with torch.no_grad():
        for rows in (5, 2):
            memories = [m.encode(src[:rows]) for m in (plain, packed)]
            caches = [m.new_cache() for m in (plain, packed)]
            step = torch.full((rows, 1), BOS)
            for _ in range(4):
                logits = [
                    m.decode(step, mem, c)[:, -1].float()
                    for m, mem, c in zip((plain, packed), memories, caches, strict=True)
                ]
                assert_close(logits[1], logits[0], **BF16)
                step = logits[0].argmax(-1, keepdim=True)


def test_greedy_search_gives_the_plain_layers_tokens_where_they_are_sure():
    plain, packed = bf16_pair()
    src = random_ids(8, 10, vocab=61, seed=3)
    settings = SearchSettings(beam=1, max_len_a=1.0, max_len_b=3)
    ours = greedy_search(plain, src, settings)
    theirs = greedy_search(packed, src, settings)
    assert_same_greedy(ours, theirs, greedy_margins(plain, src, ours, settings), MARGIN, SCORE_TOLERANCE)
