"""Golden searches: the n-best token ids and scores of a fixed small model, pinned to 1e-4, found alike
by both engines (s2s's decoder and CTranslate2 over an export of the same weights).

The model (tests/fixtures/golden_search/run, remade by make.sh beside it) writes numbers in English
words as long strings of small pieces: a search that stops as soon as `beam` hypotheses have ended
(patience 1) loses the best translation of some of them, which patience 2 keeps. The pinned values
are what s2s's decoder found when the fixture was made (`--write`, where CTranslate2 was checked to
find the same); only sentences whose searches find the same tokens with every weight perturbed by a
relative 1e-4 were kept (no near tie), so that the kernels of another CPU find them too.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch

from seq2seq.batching import pad
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.search import beam_search, greedy_search, search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import EOS
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator

FIXTURE = Path(__file__).parents[2] / "fixtures" / "golden_search"
SCORE_TOLERANCE = 1e-4
LIMITS = {"max_len_a": 3.0, "max_len_b": 10}  # the run's: words are longer than digits
SETTINGS = {
    "greedy": SearchSettings(beam=1, **LIMITS),
    "beam 4, patience 1": SearchSettings(beam=4, patience=1.0, **LIMITS),
    "beam 4, patience 2": SearchSettings(beam=4, patience=2.0, **LIMITS),
    "beam 5, nbest 3, alpha 0.6, patience 1.5": SearchSettings(
        beam=5, nbest=3, length_penalty=0.6, patience=1.5, **LIMITS
    ),
    "beam 3, nbest 2, alpha 0": SearchSettings(beam=3, nbest=2, length_penalty=0.0, **LIMITS),
}
ENGINES = ("s2s", "ctranslate2")


@functools.cache
def fixture_model() -> Translator:
    return Translator.load(FIXTURE / "run", ["best"], Placement("cpu", "fp32"))


@functools.cache
def expected() -> dict[str, Any]:
    return json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


def find(
    engine: str, sources: list[str], settings: SearchSettings, model: torch.nn.Module | None = None
) -> list[list[Hypothesis]]:
    """Each source's n-best, by s2s's decoder (over `model`, else the fixture's) or by CTranslate2
    over an export of the fixture's weights."""
    ours = fixture_model()
    if engine == "s2s":
        src = pad([[*ids, EOS] for ids in ours.tokenizers.src.encode(sources)])
        return search(model or ours.model, src, settings)
    return ct2_engine().search([ours.tokenizers.src.pieces(s) for s in sources], settings, 500)


@functools.cache
def ct2_engine() -> Any:
    """The fixture's weights exported for CTranslate2 (kept for the session)."""
    ctranslate2 = pytest.importorskip(
        "ctranslate2", reason="CTranslate2 publishes no wheel for this platform"
    )
    from seq2seq.ct2.conversion import write_model
    from seq2seq.ct2.runtime import CT2Translator

    ours = fixture_model()
    directory = Path(tempfile.mkdtemp(prefix="s2s-golden-"))
    write_model(ours.first_model, ours.tokenizers, directory, None)
    engine = ctranslate2.Translator(str(directory), device="cpu")
    return CT2Translator(engine, ours.tokenizers, ours.config, {}, directory)


def as_pinned(found: list[list[Hypothesis]]) -> list[list[list[Any]]]:
    return [[[h.tokens, round(h.score, 6)] for h in nbest] for nbest in found]


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("engine", ENGINES)
def test_the_search_finds_the_pinned_hypotheses_and_scores(engine, name):
    pinned = expected()
    found = find(engine, pinned["sources"], SETTINGS[name])
    for source, got, want in zip(pinned["sources"], found, pinned["found"][name], strict=True):
        assert [h.tokens for h in got] == [tokens for tokens, _ in want], source
        assert [h.score for h in got] == pytest.approx([score for _, score in want], abs=SCORE_TOLERANCE)


def test_stopping_at_beam_ended_hypotheses_loses_answers_that_patience_keeps():
    """The fixture is the kind it is meant to be: with patience 1 some sentence's best hypothesis
    scores below what patience 2 finds; never above (a longer search only adds hypotheses)."""
    found = expected()["found"]
    impatient = [nbest[0][1] for nbest in found["beam 4, patience 1"]]
    patient = [nbest[0][1] for nbest in found["beam 4, patience 2"]]
    assert all(p >= i - SCORE_TOLERANCE for i, p in zip(impatient, patient, strict=True))
    assert sum(p > i + 0.1 for i, p in zip(impatient, patient, strict=True)) >= 2


def test_beam_1_is_greedy_search():
    ours = fixture_model()
    src = pad([[*ids, EOS] for ids in ours.tokenizers.src.encode(expected()["sources"])])
    greedy = greedy_search(ours.model, src, SETTINGS["greedy"])
    beam = beam_search(ours.model, src, dataclasses.replace(SETTINGS["greedy"], beam=1))
    assert as_pinned(beam) == as_pinned(greedy)


def write(out: Path, candidates: int = 400, keep: int = 16) -> None:
    """Pin what s2s's decoder finds for the first `keep` of `candidates` numbers whose searches both
    engines agree on (tokens, and scores within 1e-5) and perturbed weights do not change, the
    sentences where patience 1 loses the best translation first."""
    sources = [str(n) for n in range(7, 7 + 997 * candidates, 997)]
    noisy = copy.deepcopy(fixture_model().model)
    torch.manual_seed(0)
    with torch.no_grad():
        for weight in noisy.parameters():
            weight.mul_(1 + 1e-4 * torch.randn_like(weight))
    found = {name: find("s2s", sources, settings) for name, settings in SETTINGS.items()}
    theirs = {name: find("ctranslate2", sources, settings) for name, settings in SETTINGS.items()}
    perturbed = {name: find("s2s", sources, settings, noisy) for name, settings in SETTINGS.items()}

    def agree(row: int) -> bool:
        return all(
            [h.tokens for h in found[n][row]] == [h.tokens for h in theirs[n][row]]
            and [h.tokens for h in found[n][row]] == [h.tokens for h in perturbed[n][row]]
            and all(abs(a.score - b.score) < 1e-5 for a, b in zip(found[n][row], theirs[n][row], strict=True))
            for n in SETTINGS
        )

    def lost(row: int) -> bool:
        return found["beam 4, patience 2"][row][0].score > found["beam 4, patience 1"][row][0].score + 0.1

    rows = sorted((row for row in range(len(sources)) if agree(row)), key=lambda row: not lost(row))[:keep]
    pinned = {
        "sources": [sources[row] for row in rows],
        "found": {name: as_pinned([hyps[row] for row in rows]) for name, hyps in found.items()},
    }
    out.write_text(json.dumps(pinned) + "\n", encoding="utf-8")
    print(f"pinned {len(rows)} sentences, {sum(map(lost, rows))} where patience 1 loses the best")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write the golden values of tests/fixtures/golden_search")
    parser.add_argument("--write", type=Path, required=True)
    torch.set_num_threads(1)
    write(parser.parse_args().write)
