"""The static batcher: an engine that runs several decode calls well together gets that many in
flight, each request still answered with its own lines in order; one that runs one at a time never
gets two."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from seq2seq.decoding.search import SearchSettings
from seq2seq.serve import batcher as batcher_module
from seq2seq.serve.batcher import OVERTAKE_S, Batcher, joined
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request

# a word is a token
WORD_TOKENIZERS = SimpleNamespace(src=SimpleNamespace(encode=lambda ls: [s.split() for s in ls]))


class SlowEngine:
    """Answers each line with itself upper-cased, holding each call until `together` calls are in
    it at once (or a timeout passes), and counting the most it ever held."""

    def __init__(self, calls_at_once: int, together: int) -> None:
        self.calls_at_once, self.together = calls_at_once, together
        self.call_tokens: int | None = None
        self.inside, self.most = 0, 0
        self.lock, self.all_in = threading.Lock(), threading.Barrier(together)
        self.tokenizers = WORD_TOKENIZERS

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            self.all_in.wait(timeout=0.5)
        except threading.BrokenBarrierError:
            pass
        with self.lock:
            self.inside -= 1
        return [Translation([line.upper()], [0.0]) for line in lines]


@pytest.mark.parametrize("at_once", [1, 2])
def test_calls_in_flight_are_as_many_as_the_engine_runs_together(at_once):
    engine = SlowEngine(at_once, together=2)
    batcher = Batcher(engine, window_s=0.0, max_tokens=1, calls_at_once=at_once)  # type: ignore[arg-type]
    batcher.start()
    requests = [Request(SearchSettings(beam=1 + k % 2), 100) for k in range(6)]
    futures = [batcher.translate([f"line {k}", f"more {k}"], r) for k, r in enumerate(requests)]
    answers = [f.result(timeout=30) for f in futures]
    batcher.close()
    assert [[t.texts[0] for t in a] for a in answers] == [[f"LINE {k}", f"MORE {k}"] for k in range(6)]
    assert engine.most == at_once


class RecordingEngine:
    """Answers at once, recording the lines of each call; `call_tokens` as given."""

    calls_at_once = 1

    def __init__(self, call_tokens: int | None = None) -> None:
        self.call_tokens, self.calls = call_tokens, []
        self.tokenizers = WORD_TOKENIZERS

    def translate(self, lines, request, first_line=1, prefixes=None):  # noqa: ANN001
        self.calls.append(list(lines))
        return [Translation([line.upper()], [0.0]) for line in lines]


def queued_then_served(batcher: Batcher, jobs: list[list[str]], waited: dict[int, float] | None = None):
    """Queue `jobs` (each a request's lines) before the batcher runs, the k-th having waited
    `waited[k]` seconds; serve them; every answer checked to be its own lines."""
    futures = []
    for k, lines in enumerate(jobs):
        before = len(batcher._queue)
        futures.append(batcher.translate(lines, Request(SearchSettings(beam=1), 100)))
        for part in list(batcher._queue)[before:]:  # every part of the request
            part.queued -= (waited or {}).get(k, 0.0)
    batcher.start()
    for lines, future in zip(jobs, futures, strict=True):
        assert [t.texts[0] for t in future.result(timeout=30)] == [line.upper() for line in lines]
    batcher.close()
    return batcher.translator.calls


LONG = ["a b c d e f g h"] * 8  # 8 lines of 8 words: 72 tokens with <eos>


def test_a_short_request_is_not_queued_behind_long_ones(monkeypatch):
    monkeypatch.setattr(batcher_module, "OVERTAKE_S", 60.0)  # however slow the machine
    engine = RecordingEngine()
    calls = queued_then_served(Batcher(engine, 0.0, max_tokens=72), [LONG, LONG, ["short"]])
    assert calls == [["short"], LONG, LONG]


def test_a_request_waiting_long_enough_is_overtaken_no_more():
    engine = RecordingEngine()
    calls = queued_then_served(Batcher(engine, 0.0, max_tokens=72), [LONG, ["short"]], {0: OVERTAKE_S})
    assert calls == [LONG, ["short"]]


def test_the_later_parts_of_an_old_request_do_not_overtake_as_one(monkeypatch):
    """Each part of a long request waits from when the one before it started: once the request is
    old, its next part goes first, not all of them before a short request."""
    monkeypatch.setattr(batcher_module, "OVERTAKE_S", 5.0)
    engine = RecordingEngine(call_tokens=20)  # 9 words and <eos>: two lines a call, no room for more
    long = [f"w{k} x y z e f g h i" for k in range(6)]
    calls = queued_then_served(Batcher(engine, 0.0, max_tokens=1000), [long, ["short"]], {0: 5.0})
    assert calls == [long[0:2], ["short"], long[2:4], long[4:6]]


def test_a_model_call_ends_the_collecting_and_goes_next():
    engine = RecordingEngine()
    batcher = Batcher(engine, 10.0, max_tokens=1000)  # a long window: only the model call ends it soon
    batcher.start()
    request = Request(SearchSettings(beam=1), 100)
    first = batcher.translate(["one"], request)
    time.sleep(0.2)  # "one" is being collected, waiting for more
    called = batcher.call(lambda: engine.calls.append(["model call"]))
    second = batcher.translate(["two"], request)
    assert first.result(timeout=5) and called.result(timeout=5) is None
    batcher.close()
    assert second.result(timeout=30)
    assert engine.calls[:2] == [["one"], ["model call"]]


def test_calls_stay_within_what_the_engine_gains_from():
    jobs = [[f"line {k} of four words"] for k in range(8)]  # 6 tokens each with <eos>
    whole = queued_then_served(Batcher(RecordingEngine(), 0.0, max_tokens=1000), jobs)
    assert whole == [[j[0] for j in jobs]]
    calls = queued_then_served(Batcher(RecordingEngine(call_tokens=12), 0.0, max_tokens=1000), jobs)
    assert calls == [[jobs[k][0], jobs[k + 1][0]] for k in range(0, 8, 2)]


def test_a_long_request_is_decoded_in_parts_within_the_budget_and_answered_whole():
    engine = RecordingEngine(call_tokens=20)  # each line below costs 9 tokens: two lines a call
    lines = [f"w{k} x y z e f g h" for k in range(5)] + ["", "tail"]
    calls = queued_then_served(Batcher(engine, 0.0, max_tokens=1000), [lines])
    assert sorted(line for call in calls for line in call) == sorted(lines)  # each line decoded once
    assert all(sum(len(line.split()) + 1 for line in call if line) <= 20 for call in calls)
    assert len(calls) == 3  # w0 w1 | w2 w3 | w4, the blank line and "tail"


def test_a_part_failing_fails_the_request_and_cancelling_it_cancels_its_parts():
    parts = [Future() for _ in range(3)]
    whole = joined(parts)
    parts[0].set_result(["a"])
    parts[1].set_exception(ValueError("bad line"))
    with pytest.raises(ValueError, match="bad line"):
        whole.result(timeout=1)
    assert parts[2].cancelled()  # decoded for nobody otherwise
    parts = [Future() for _ in range(2)]
    whole = joined(parts)
    parts[0].set_running_or_notify_cancel()
    assert whole.cancel()
    assert not parts[0].cancelled() and parts[1].cancelled()
    parts[0].set_result(["late"])  # a part already decoding finishes; nobody waits for it
    assert whole.cancelled()
