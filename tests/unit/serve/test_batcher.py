"""The static batcher: an engine that runs several decode calls well together gets that many in
flight, each request still answered with its own lines in order; one that runs one at a time never
gets two."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from seq2seq.decoding.search import SearchSettings
from seq2seq.serve.batcher import Batcher
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request


class SlowEngine:
    """Answers each line with itself upper-cased, holding each call until `together` calls are in
    it at once (or a timeout passes), and counting the most it ever held."""

    def __init__(self, calls_at_once: int, together: int) -> None:
        self.calls_at_once, self.together = calls_at_once, together
        self.inside, self.most = 0, 0
        self.lock, self.all_in = threading.Lock(), threading.Barrier(together)
        self.tokenizers = SimpleNamespace(src=SimpleNamespace(encode=lambda ls: [s.split() for s in ls]))

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
