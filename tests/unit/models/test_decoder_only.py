"""The decoder-only family (`model.arch: decoder_only`): masks, positions, loss and search properties."""

import dataclasses
import json

import pytest
import torch
from torch.testing import assert_close

from seq2seq.config import config_from_dict
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.errors import ConfigError
from seq2seq.special import BOS, PAD
from seq2seq.training.loss import TrainingLoss, sequence_loss
from tests.conftest import make_model, random_ids, tiny_config_dict
from tests.helpers import run_cli
from tests.unit.decoding.test_search import EosBiased, ends_early, forced_score, settings


def decoder_only(seed: int = 0, prefix_lm: bool = False):
    return make_model(seed=seed, arch="decoder_only", prefix_lm=prefix_lm)


def with_bos(ids: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.full((ids.size(0), 1), BOS), ids], dim=1)


@pytest.mark.parametrize("prefix_lm", [False, True])
def test_a_target_token_changes_nothing_before_it(prefix_lm):
    model = decoder_only(prefix_lm=prefix_lm)
    src, tgt = random_ids(2, 7), with_bos(random_ids(2, 5, seed=1))
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % 19 + 4
    a, b = model(src, tgt), model(src, changed)
    assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


@pytest.mark.parametrize("prefix_lm", [False, True])
def test_source_positions_see_the_whole_source_only_as_a_prefix_lm(prefix_lm):
    """Layer 2's keys at the first source token depend on the last source token iff prefix_lm."""
    model = decoder_only(prefix_lm=prefix_lm)
    src = random_ids(2, 6)
    changed = src.clone()
    changed[:, -1] = (changed[:, -1] + 1 - 4) % 19 + 4
    first = model.encode(src).keys[1][:, :, 0]
    moved = not torch.allclose(first, model.encode(changed).keys[1][:, :, 0])
    assert moved == prefix_lm


def test_every_source_token_reaches_the_target():
    model = decoder_only()
    src, tgt = random_ids(2, 6), with_bos(random_ids(2, 4, seed=1))
    changed = src.clone()
    changed[:, 0] = (changed[:, 0] + 1 - 4) % 19 + 4
    assert not torch.allclose(model(src, tgt)[:, 0], model(changed, tgt)[:, 0])


def test_the_loss_counts_target_tokens_only():
    model = decoder_only()
    src, tgt = random_ids(3, 9), random_ids(3, 5, seed=1)
    src[1, 4:] = PAD
    tgt_in, tgt_out = with_bos(tgt), torch.cat([tgt, torch.full((3, 1), 3)], dim=1)
    logits = model(src, tgt_in)
    assert logits.shape[:2] == tgt_out.shape  # one prediction per target token, none for the source
    assert_close(TrainingLoss(model, 0.1)(src, tgt_in, tgt_out), sequence_loss(logits, tgt_out, 0.1))


def test_source_padding_and_batch_neighbours_change_nothing():
    model = decoder_only(prefix_lm=True)
    src = random_ids(3, 8)
    src[1, 5:] = PAD
    src[2, 2:] = PAD
    tgt = with_bos(random_ids(3, 4, seed=2))
    batched = model(torch.cat([src, torch.full((3, 3), PAD)], dim=1), tgt)
    for i in range(3):
        alone = model(src[i : i + 1, : int((src[i] != PAD).sum())], tgt[i : i + 1])
        assert_close(batched[i : i + 1], alone, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("prefix_lm", [False, True])
def test_search_batched_equals_one_at_a_time_for_different_source_lengths(beam, prefix_lm):
    model = EosBiased(decoder_only(seed=8, prefix_lm=prefix_lm), slope=0.5)
    src = random_ids(5, 8, seed=3)
    src[1, 4:] = PAD
    src[3, 6:] = PAD
    s = settings(beam=beam, nbest=beam, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    batched = beam_search(model, src, s)
    assert ends_early(batched, src, s)
    for i in range(5):
        alone = beam_search(model, src[i : i + 1, : int((src[i] != PAD).sum())], s)[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[i]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[i]], abs=1e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_cached_search_equals_uncached(beam):
    model = EosBiased(decoder_only(seed=10), slope=0.5)
    src = random_ids(4, 7, seed=5)
    src[0, 3:] = PAD
    base = settings(beam=beam, nbest=beam, max_len_a=1.0, max_len_b=5)
    fast = beam_search(model, src, base)
    assert ends_early(fast, src, base)
    slow = beam_search(model, src, dataclasses.replace(base, use_cache=False))
    for f, s in zip(fast, slow, strict=True):
        assert [h.tokens for h in f] == [h.tokens for h in s]
        assert [h.score for h in f] == pytest.approx([h.score for h in s], abs=1e-4)


def test_beam_one_is_greedy_and_scores_are_teacher_forced():
    model = EosBiased(decoder_only(seed=12), slope=0.5)
    src = random_ids(4, 7, seed=9)
    src[1, 4:] = PAD
    s = settings(beam=1, nbest=1, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    beam, greedy = beam_search(model, src, s), greedy_search(model, src, s)
    assert ends_early(greedy, src, s)
    assert [h[0].tokens for h in beam] == [h[0].tokens for h in greedy]
    for i, (h,) in enumerate(greedy):
        row = src[i : i + 1, : int((src[i] != PAD).sum())]
        assert h.score == pytest.approx(forced_score(model, row, h.tokens, s), abs=1e-4)


def test_source_attention_sums_to_at_most_one_over_real_source_columns():
    model = decoder_only()
    src = random_ids(2, 6)
    src[1, 3:] = PAD
    sink: list[torch.Tensor] = []
    model.decode(with_bos(random_ids(2, 3, seed=1)), model.encode(src), attn_sink=sink)
    weights = sink[-1]  # (B, T, S), the source part of the attention, right-padded columns
    assert weights.shape == (2, 4, 6)
    assert torch.all(weights[1, :, 3:] == 0)
    assert torch.all(weights.sum(-1) <= 1 + 1e-5) and torch.all(weights.sum(-1) > 0)


@pytest.mark.slow
def test_train_translate_evaluate_and_report_through_the_cli(trained_run, tmp_path):
    """The same verbs on a decoder-only run: one output line per input line, scores, a report."""
    trained = trained_run("decoder_only")  # trained through the CLI
    run = trained.run
    result = run_cli("translate", str(run), "--beam", "3", input="red cat\n\nblue bird on the house\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 3 and result.stdout.split("\n")[1] == ""
    src, ref = trained.data / "valid.src", trained.data / "valid.tgt"
    scores, report = tmp_path / "s.json", tmp_path / "report.html"
    args = ["--src", str(src), "--ref", str(ref), "--json", str(scores), "--report", str(report)]
    result = run_cli("evaluate", str(run), *args)
    assert result.exit_code == 0, result.output
    (system,) = json.loads(scores.read_text())["systems"]
    assert system["lines"] == 20 and "bleu" in system["scores"]
    assert (report / "index.html").stat().st_size > 0
    result = run_cli("export", str(run), str(tmp_path / "ct2"))
    assert result.exit_code == 2 and "encoder-decoder models only" in result.output


def test_a_decoder_only_config_needs_room_for_source_and_target(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["model"] |= {"arch": "decoder_only"}  # max_positions 64 < 2 x (32 + 2)
    with pytest.raises(
        ConfigError, match="model.max_positions: a decoder-only model holds source and target"
    ):
        config_from_dict(raw)
    raw["model"] |= {"arch": "encoder_decoder", "prefix_lm": True}
    with pytest.raises(ConfigError, match="model.prefix_lm: only for model.arch: decoder_only"):
        config_from_dict(raw)
