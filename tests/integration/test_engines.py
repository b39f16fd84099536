"""One property suite over both engines: s2s's own decoder (`Translator`) and CTranslate2 over an
export of the same run (`CT2Translator`), through the `Engine` interface only. Whatever engine
`--engine auto` chooses, a caller gets one line out per line in, blank lines kept blank, prefixes
honoured, n-best lists best first with their scores, long lines clipped, outputs within their
length limits, and an engine that no call changes."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import run_cli

pytest.importorskip("ctranslate2", reason="CTranslate2 publishes no wheel for this platform")
from seq2seq.ct2.runtime import CT2Translator  # noqa: E402

LINES = ["red cat runs", "", "the big dog sleeps under a tree", "   ", "blue bird", "cat"]
ENGINES = ("s2s", "ctranslate2")


def _export(run: Path, out: Path) -> Path:
    result = run_cli("export", str(run), str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def engines(
    trained_run: Callable[[str], TrainedRun], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Engine]:
    run = trained_run("served").run
    export = _export(run, tmp_path_factory.mktemp("engines") / "export")
    return {
        "s2s": Translator.load(run, ["best"], Placement("cpu", "fp32")),
        "ctranslate2": CT2Translator.load(export, Placement("cpu")),
    }


def request_of(engine: Engine, **asked: object) -> Request:
    return Request.of(engine.options(DecodeOverrides(**asked)))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("beam", [1, 3])
def test_one_line_out_per_line_in_and_blank_lines_stay_blank(engines, name, beam):
    engine = engines[name]
    out = engine.translate(LINES, request_of(engine, beam=beam))
    assert len(out) == len(LINES)
    for line, translation in zip(LINES, out, strict=True):
        assert len(translation.texts) == len(translation.scores) == 1
        if not line.strip():
            assert translation.texts == [""] and translation.scores == [None]
        elif translation.texts[0].strip():
            assert isinstance(translation.scores[0], float) and math.isfinite(translation.scores[0])


@pytest.mark.parametrize("name", ENGINES)
def test_an_nbest_list_is_best_first_with_a_score_each(engines, name):
    engine = engines[name]
    out = engine.translate(LINES, request_of(engine, beam=4, nbest=3))
    for line, translation in zip(LINES, out, strict=True):
        assert len(translation.texts) == len(translation.scores) == 3
        if not line.strip():
            assert translation.scores == [None] * 3
            continue
        scores = [s for s in translation.scores if s is not None]
        assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("name", ENGINES)
def test_each_translation_starts_with_its_prefix(engines, name):
    engine = engines[name]
    plain = engine.translate(LINES, request_of(engine, beam=2))
    prefixes = ["TREE", "", "", "", "CAT RED", ""]
    forced = engine.translate(LINES, request_of(engine, beam=2), prefixes=prefixes)
    for line, prefix, got, free in zip(LINES, prefixes, forced, plain, strict=True):
        if not line.strip():
            assert got.texts == [""]
        elif prefix:
            assert got.texts[0].split()[: len(prefix.split())] == prefix.split()
        else:
            assert got.texts == free.texts  # a line without a prefix is translated as usual


@pytest.mark.parametrize("name", ENGINES)
def test_a_line_over_the_positions_is_clipped_and_still_gets_one_line(engines, name, caplog):
    engine = engines[name]
    long_line = " ".join(["red cat runs"] * 40)  # far over the model's 64 positions
    out = engine.translate(["blue bird", long_line], request_of(engine, beam=1), first_line=7)
    assert len(out) == 2 and len(out[1].texts) == 1
    assert "line 8 has" in caplog.text  # numbered as the caller numbers its lines


@pytest.mark.parametrize("name", ENGINES)
def test_outputs_keep_within_their_length_limits(engines, name):
    engine = engines[name]
    request = request_of(engine, beam=2, max_len_a=0.0, max_len_b=3)
    tokenizer = engine.tokenizers.tgt
    for translation in engine.translate(LINES, request):
        assert len(tokenizer.encode([translation.texts[0]])[0]) <= 3


@pytest.mark.parametrize("name", ENGINES)
def test_a_call_changes_nothing_in_the_engine(engines, name):
    """The same request gives the same lines before and after calls of other settings and budgets."""
    engine = engines[name]
    first = engine.translate(LINES, request_of(engine, beam=3))
    engine.translate(LINES, request_of(engine, beam=1, max_len_b=2), prefixes=["CAT"] * len(LINES))
    engine.translate(LINES, dataclasses.replace(request_of(engine, beam=2), max_tokens=3))
    assert [t.texts for t in engine.translate(LINES, request_of(engine, beam=3))] == [t.texts for t in first]
