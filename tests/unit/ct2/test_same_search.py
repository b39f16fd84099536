"""Both engines run one beam search (`decoding.beam_rule`): for the same weights, s2s's decoder and
CTranslate2 return the same n-best, in the same order, with the same scores, for every beam, length
penalty, n-best, patience, length limit and prefix, on models whose hypotheses end by choice, run to
their length limits, or often stop at once."""

from __future__ import annotations

import torch

from seq2seq.batching import pad
from seq2seq.data.textio import read_lines
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.search import search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import EOS
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.unit.ct2.conftest import UNDER_TRAINED, CT2Translator, pytest

SCORE_TOLERANCE = 1e-4  # |s2s - CTranslate2| of a hypothesis' score, fp32 (seen: under 1e-5)

SETTINGS = {
    "beam 4": SearchSettings(beam=4),
    "beam 5, patience 2": SearchSettings(beam=5, patience=2.0),
    "beam 4, nbest 3, alpha 0.6, patience 1.5": SearchSettings(
        beam=4, nbest=3, length_penalty=0.6, patience=1.5
    ),
    "beam 3, nbest 2, alpha 0": SearchSettings(beam=3, nbest=2, length_penalty=0.0),
    "beam 4, nbest 4, patience 3": SearchSettings(beam=4, nbest=4, patience=3.0),
    "beam 4, min_len 3, short limits": SearchSettings(beam=4, min_len=3, max_len_a=0.5, max_len_b=3),
    "beam 2, min_len 0, no_repeat 2": SearchSettings(beam=2, min_len=0, no_repeat_ngram=2, patience=2.0),
}


def assert_same_nbest(ours: list[list[Hypothesis]], theirs: list[list[Hypothesis]]) -> None:
    """Every sentence: the same hypotheses in the same order, each with one score; two hypotheses
    may change places only where their scores tie (within SCORE_TOLERANCE: the kernels' rounding)."""
    differ = []
    for row, (mine, found) in enumerate(zip(ours, theirs, strict=True)):
        assert len(mine) == len(found), row
        for a, b in zip(mine, found, strict=True):
            assert b.score == pytest.approx(a.score, abs=SCORE_TOLERANCE), (row, mine, found)
        if [h.tokens for h in mine] != [h.tokens for h in found]:
            differ.append((row, [h.tokens for h in mine], [h.tokens for h in found]))
    assert len(differ) <= len(ours) // 50, f"{len(differ)} of {len(ours)} sentences differ: {differ[:2]}"


def both_engines(
    model: torch.nn.Module,
    theirs: CT2Translator,
    lines: list[str],
    settings: SearchSettings,
    prefixes: list[list[int]] | None = None,
) -> tuple[list[list[Hypothesis]], list[list[Hypothesis]]]:
    """s2s's n-best of each line (`decoding.search`), then CTranslate2's (`CT2Translator.search`)."""
    src_tok, tgt_tok = theirs.tokenizers.src, theirs.tokenizers.tgt
    src = pad([[*ids, EOS] for ids in src_tok.encode(lines)])
    forced = None if prefixes is None else Forced.of(prefixes, torch.device("cpu"))
    ours = search(model, src, settings, forced)
    pieces = None if prefixes is None else [tgt_tok.id_pieces(p) for p in prefixes]
    found = theirs.search([src_tok.pieces(x) for x in lines], settings, 500, prefixes=pieces)
    return ours, found


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("kind", UNDER_TRAINED)
def test_both_engines_find_the_same_nbest_on_under_trained_models(under_trained, tiny_run, kind, name):
    model, theirs = under_trained(kind)
    lines = read_lines(tiny_run.data / "valid.src") + read_lines(tiny_run.data / "train.src")[:40]
    ours, found = both_engines(model, theirs, lines, SETTINGS[name])
    assert_same_nbest(ours, found)


@pytest.fixture(scope="module")
def confident(trained) -> tuple[torch.nn.Module, CT2Translator, list[str], list[str]]:
    """The trained run's model, its export, and lines with their references."""
    run, export = trained
    data = run.parent / "data"
    lines = read_lines(data / "valid.src") + read_lines(data / "train.src")[:40]
    references = read_lines(data / "valid.tgt") + read_lines(data / "train.tgt")[:40]
    model = Translator.load(run, ["best"], Placement("cpu", "fp32")).model
    return model, CT2Translator.load(export, Placement("cpu")), lines, references


@pytest.mark.parametrize("name", list(SETTINGS))
def test_both_engines_find_the_same_nbest_where_hypotheses_end_by_choice(confident, name):
    model, theirs, lines, _ = confident
    settings = SETTINGS[name]
    ours, found = both_engines(model, theirs, lines, settings)
    assert_same_nbest(ours, found)
    src = pad([[*ids, EOS] for ids in theirs.tokenizers.src.encode(lines)])
    limits = max_output_lengths(src, settings, model.max_positions).tolist()
    ended = sum(len(nbest[0].tokens) < limit - 1 for nbest, limit in zip(ours, limits, strict=True))
    assert settings.max_len_b < 10 or ended >= len(lines) // 4, (
        f"only {ended} best hypotheses end by choice, before their length limits"
    )


@pytest.mark.parametrize(
    "name", ["beam 4", "beam 4, nbest 3, alpha 0.6, patience 1.5", "beam 3, nbest 2, alpha 0"]
)
def test_both_engines_continue_a_prefix_alike(confident, name):
    model, theirs, lines, references = confident
    prefixes = [ids[: i % 3] for i, ids in enumerate(theirs.tokenizers.tgt.encode(references))]
    ours, found = both_engines(model, theirs, lines, SETTINGS[name], prefixes)
    assert_same_nbest(ours, found)
    for nbest, prefix in zip(ours, prefixes, strict=True):
        assert all(h.tokens[: len(prefix)] == prefix for h in nbest)
