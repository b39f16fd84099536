"""`s2s serve`'s continuous batching (`ContinuousBatcher`) on tiny trained runs: each request gets
what `s2s translate` gives its lines, whatever it shared its steps with; a failed batch fails only its
requests; closing answers every request that arrived."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from seq2seq.decoding.running_search import RunningSearch
from seq2seq.errors import Seq2SeqError
from seq2seq.serve.app import batcher_for
from seq2seq.serve.continuous import ContinuousBatcher
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate.direction import Direction
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import WORDS, TrainedRun

BUDGET = 60  # beam-expanded source tokens in flight: a request of many lines joins a few at a time


@pytest.fixture(scope="module")
def translator(served_run: Path) -> Translator:
    return Translator.load(served_run, placement=Placement("cpu", "fp32"))


def requests_of(translator: Translator) -> list[tuple[list[str], object, list[str] | None]]:
    """(lines, search settings, prefixes): greedy, beam 3 with its 3-best, prefixes, blank lines, and
    one request longer than the budget."""
    words = sorted(WORDS)
    greedy = translator.options(DecodeOverrides(beam=1)).search
    beam = translator.options(DecodeOverrides(beam=3, nbest=3)).search
    out = []
    for i in range(12):
        lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(1 + i % 5))]
        out.append((lines, greedy if i % 2 else beam, None))
    many = [" ".join(words[j : j + 4]) for j in range(0, 40, 3)]
    out.append((many[:8] + ["", "  "], greedy, None))
    out.append((many[8:12], beam, ["the", "", "a big", "red"]))
    return out


LANES = pytest.mark.parametrize("lanes", [1, 2])  # two: each request's sentences spread over both


@LANES
def test_every_request_gets_what_translate_gives_its_lines(translator, lanes, monkeypatch):
    step, stepping = RunningSearch.step, set()

    def seen(search):
        stepping.add(threading.current_thread().name)
        return step(search)

    monkeypatch.setattr(RunningSearch, "step", seen)
    batcher = ContinuousBatcher(translator, BUDGET, lanes)
    asked = requests_of(translator)
    futures = [
        batcher.translate(lines, Request(settings, BUDGET), prefixes) for lines, settings, prefixes in asked
    ]
    batcher.start()
    answers = [future.result(timeout=120) for future in futures]
    batcher.close()
    assert len(stepping) == lanes  # the sentences spread over every lane
    for (lines, settings, prefixes), answer in zip(asked, answers, strict=True):
        expected = translator.translate(lines, Request(settings, BUDGET), prefixes=prefixes)
        assert [t.texts for t in answer] == [t.texts for t in expected]
        for got, want in zip(answer, expected, strict=True):
            assert got.scores == pytest.approx(want.scores, abs=1e-4)


@LANES
def test_closing_answers_every_request_that_arrived_then_refuses(translator, lanes):
    batcher = ContinuousBatcher(translator, BUDGET, lanes)
    asked = requests_of(translator)
    futures = [
        batcher.translate(lines, Request(settings, BUDGET), prefixes) for lines, settings, prefixes in asked
    ]
    batcher.start()
    batcher.close()
    assert all(future.done() and future.exception() is None for future in futures)
    with pytest.raises(RuntimeError, match="closed"):
        batcher.translate(["red cat"], Request(asked[0][1], BUDGET))


@LANES
def test_a_failed_step_fails_the_requests_in_its_batch_and_the_server_goes_on(translator, monkeypatch, lanes):
    """A step of a beam-3 batch raises once: its requests get the error (with one lane, every beam-3
    request: they share one batch), the others their translations, and a later request is answered."""
    step, failed = RunningSearch.step, []

    def fails_once(search):
        if search.settings.beam == 3 and not failed:
            failed.append(True)
            raise RuntimeError("out of memory")
        return step(search)

    monkeypatch.setattr(RunningSearch, "step", fails_once)
    batcher = ContinuousBatcher(translator, 10_000, lanes)
    asked = requests_of(translator)[:6]
    futures = [batcher.translate(lines, Request(settings, BUDGET)) for lines, settings, _ in asked]
    batcher.start()
    errors = 0
    for (lines, settings, _), future in zip(asked, futures, strict=True):
        if future.exception(timeout=60) is not None:
            assert settings.beam == 3 and "out of memory" in str(future.exception())
            errors += 1
        else:
            assert [t.texts for t in future.result()] == [
                t.texts for t in translator.translate(lines, Request(settings, 10_000))
            ]
    assert errors == 3 if lanes == 1 else errors >= 1
    lines, settings, _ = asked[0]
    later = batcher.translate(lines, Request(settings, BUDGET)).result(timeout=60)
    batcher.close()
    assert [t.texts for t in later] == [
        t.texts for t in translator.translate(lines, Request(settings, 10_000))
    ]


@LANES
def test_requests_into_different_languages_share_a_running_batch(multilingual_run: TrainedRun, lanes):
    """Each sentence starts with its own request's language token, so both directions decode in one
    running batch, and each request gets what `translate --to` gives."""
    translator = Translator.load(multilingual_run.run, placement=Placement("cpu", "fp32"))
    settings = translator.options(DecodeOverrides(beam=2)).search
    asked = [("en", ["red cat runs", "blue bird"]), ("de", ["the big dog sleeps"]), ("en", ["a tree"])]
    batcher = ContinuousBatcher(translator, 10_000, lanes)
    futures = [batcher.translate(lines, Request(settings, BUDGET, Direction(to))) for to, lines in asked]
    batcher.start()
    answers = [future.result(timeout=60) for future in futures]
    batcher.close()
    for (to, lines), answer in zip(asked, answers, strict=True):
        expected = translator.translate(lines, Request(settings, 200, Direction(to)))
        assert [t.texts for t in answer] == [t.texts for t in expected]


@pytest.mark.parametrize(
    ("batching", "own", "message"),
    [
        ("dynamic", True, "--batching dynamic: choose one of auto, continuous, static"),
        ("continuous", False, "CTranslate2 decodes in static batches: use --batching static"),
    ],
)
def test_batching_that_the_engine_cannot_do_is_refused(translator, batching, own, message):
    settings = ServerSettings(DecodeOverrides(), 0, batching=batching)
    with pytest.raises(Seq2SeqError, match=message):
        batcher_for(translator, settings, 100, translator if own else None)


def test_auto_batching_is_continuous_for_s2s_decoder_and_static_for_another_engine(translator):
    auto = ServerSettings(DecodeOverrides(), 0)
    assert batcher_for(translator, auto, 100, translator).kind == "continuous"
    assert batcher_for(translator, auto, 100, None).kind == "static"


def test_failing_batches_in_both_lanes_fail_each_request_once_and_the_batcher_still_closes(
    translator, monkeypatch
):
    """Every step raises: requests whose sentences are spread over both lanes are failed by each
    lane's batch; each future gets the error once, and both lanes go on until closed."""

    def fails(search):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(RunningSearch, "step", fails)
    batcher = ContinuousBatcher(translator, BUDGET, lanes=2)
    asked = requests_of(translator)
    futures = [
        batcher.translate(lines, Request(settings, BUDGET), prefixes) for lines, settings, prefixes in asked
    ]
    batcher.start()
    for (lines, _, _), future in zip(asked, futures, strict=True):
        error = future.exception(timeout=60)
        if any(line.strip() for line in lines):
            assert isinstance(error, RuntimeError) and "out of memory" in str(error)
        else:  # nothing to decode: answered at once
            assert error is None and all(t.texts == [""] * len(t.texts) for t in future.result())
    batcher.close()
    assert batcher._thread is not None and not batcher._thread.is_alive()
