"""Dynamic batching: requests that arrive close together are translated in one decode call.

Callers on any thread (the server's event loop) submit lines and get a `concurrent.futures.Future`;
one worker thread owns the model. It takes the oldest waiting request, waits up to `window_s` for
more, stops collecting at a budget of beam-expanded source tokens (as `decode.max_tokens` budgets an
offline batch), and translates the requests of each search setting together. Each future receives
exactly its own lines' translations, in order. A request whose future was cancelled while it waited
(its caller timed out) is skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from seq2seq.decoding import SearchSettings
from seq2seq.translate import Translator

log = logging.getLogger(__name__)


@dataclass
class TranslateJob:
    """The lines of one request, decoded with `settings`; the future gets one Translation per line."""

    lines: Sequence[str]
    settings: SearchSettings
    future: Future = field(default_factory=Future)


@dataclass
class CallJob:
    """Other work on the model (an attention map): run alone, on the worker thread."""

    fn: Callable[[], Any]
    future: Future = field(default_factory=Future)


class Batcher:
    """Translates submitted requests on one worker thread, merging those that arrive within a window."""

    def __init__(self, translator: Translator, window_s: float, max_tokens: int) -> None:
        self.translator, self.window_s, self.max_tokens = translator, window_s, max_tokens
        self._queue: deque[TranslateJob | CallJob] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._work, name="s2s-decode", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Finish every request already submitted, then stop the worker."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join()

    def translate(self, lines: Sequence[str], settings: SearchSettings) -> Future:
        """A future of `list[Translation]`, one per line, in order."""
        return self._put(TranslateJob(list(lines), settings))

    def call(self, fn: Callable[[], Any]) -> Future:
        """A future of `fn()`, run on the worker thread between batches."""
        return self._put(CallJob(fn))

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def _put(self, job: TranslateJob | CallJob) -> Future:
        with self._ready:
            if self._closing:
                raise RuntimeError("the batcher is closed")
            self._queue.append(job)
            self._ready.notify()
        return job.future

    def _work(self) -> None:
        while (jobs := self._collect()) is not None:
            if isinstance(jobs[0], CallJob):
                _settle(jobs[0].future, jobs[0].fn)
                continue
            groups: dict[SearchSettings, list[TranslateJob]] = {}
            for job in jobs:  # a decode call has one setting: different beams or n-best never mix
                groups.setdefault(job.settings, []).append(job)
            for settings, group in groups.items():
                self._decode(settings, group)

    def _collect(self) -> list[TranslateJob] | list[CallJob] | None:
        """The next batch: one CallJob, or TranslateJobs within the window and the token budget.

        None once closing and nothing is left. Jobs whose futures were cancelled are dropped here.
        """
        with self._ready:
            while True:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    return None
                first = self._queue.popleft()
                if first.future.set_running_or_notify_cancel():
                    break
            if isinstance(first, CallJob):
                return [first]
            batch, cost = [first], self._cost(first)
            deadline = time.monotonic() + self.window_s
            while cost < self.max_tokens:
                if not self._queue:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closing:
                        break
                    self._ready.wait(remaining)
                    continue
                job = self._queue[0]
                job_cost = 0 if isinstance(job, CallJob) else self._cost(job)
                if isinstance(job, CallJob) or cost + job_cost > self.max_tokens:
                    break
                self._queue.popleft()
                if job.future.set_running_or_notify_cancel():
                    batch.append(job)
                    cost += job_cost
            return batch

    def _cost(self, job: TranslateJob) -> int:
        """Beam-expanded source tokens (with <eos>) of the job's non-empty lines; at least 1."""
        lines = [line for line in job.lines if line.strip()]
        tokens = sum(len(ids) + 1 for ids in self.translator.tokenizers.src.encode(lines))
        return max(tokens * job.settings.beam, 1)

    def _decode(self, settings: SearchSettings, jobs: list[TranslateJob]) -> None:
        """Translate the lines of `jobs` in one call and hand each job its own slice of the result."""
        lines = [line for job in jobs for line in job.lines]
        log.debug("decoding %d lines of %d requests", len(lines), len(jobs))
        try:
            results = self.translator.translate(lines, settings, self.max_tokens)
        except Exception as e:  # a failed decode fails the requests in it, not the server
            log.exception("decoding a batch failed")
            for job in jobs:
                job.future.set_exception(e)
            return
        start = 0
        for job in jobs:
            job.future.set_result(results[start : start + len(job.lines)])
            start += len(job.lines)


def _settle(future: Future, fn: Callable[[], Any]) -> None:
    """The future gets fn's result, or its exception (the worker keeps serving other requests)."""
    try:
        future.set_result(fn())
    except Exception as e:  # whatever went wrong belongs to this request
        log.exception("a model call failed")
        future.set_exception(e)
