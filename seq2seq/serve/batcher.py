"""Dynamic batching: requests that arrive close together are translated in one decode call.

Callers on any thread (the server's event loop) submit lines and get a `concurrent.futures.Future`;
one thread owns the model. A call starts with the cheapest request waiting (the oldest instead once
it has waited `OVERTAKE_S`, so none waits for ever) and adds the cheapest others until none has
arrived for `window_s` (clients answered together send their next requests a few ms apart, so a
fixed window would split them), for at most `MAX_WINDOWS` windows in all, or until its budget of
beam-expanded source tokens is reached: `decode.max_tokens`, as for an offline batch, or less for an
engine that gains nothing from larger calls (`call_tokens`: CTranslate2 on a CPU, one thread a
call), so that a short request never waits long behind a call in flight. A request over the budget
is decoded in parts and answered whole. The requests of each `Request` (search setting, target
language) are translated together; each future receives exactly its own lines' translations, in
order. A request whose future was cancelled while it waited (its caller timed out) is skipped.

An engine that decodes several calls at once (`calls_at_once`: CTranslate2, whose inter-thread
workers batch only within one call) gets that many batches in flight: the next is collected while
the others decode, so every worker is busy under load. s2s's decoder takes one call at a time.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from seq2seq.translate.engine import Engine
from seq2seq.translate.request import Request

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_WINDOWS = 10  # the longest a request waits for others: this many windows
OVERTAKE_S = 0.5  # a request waiting this long starts the next call, whatever cheaper ones wait


@dataclass
class TranslateJob:
    """The lines of one request, decoded as `request` asks; the future gets one Translation per line."""

    lines: Sequence[str]
    request: Request
    prefixes: Sequence[str] | None = None  # a target prefix per line ("" for none), or none at all
    cost: int = 1  # beam-expanded source tokens (`Batcher.parts`)
    future: Future = field(default_factory=Future)
    queued: float = field(default_factory=time.monotonic)  # since when it waits to start a call
    # the request's next part (`Batcher.parts`): it waits from when this one is taken (until then
    # `queued` is infinite), so a long request's parts do not all overtake once it is `OVERTAKE_S` old
    next_part: TranslateJob | None = field(default=None, repr=False, compare=False)


@dataclass
class CallJob:
    """Other work on the model (an attention map): run alone, on the worker thread."""

    fn: Callable[[], Any]
    future: Future = field(default_factory=Future)
    queued: float = field(default_factory=time.monotonic)


class Batcher:
    """Translates submitted requests on one thread, merging those that arrive within a window.

    `run()` serves on the calling thread until `close()`; `start()` runs it on a new thread. Torch
    ops run fastest on a thread that loaded the model, or on the only thread that uses torch: with
    OpenMP, every thread that ran torch ops keeps its own team of helper threads, and once there are
    more of those than cores, they stop spinning between ops (elementwise ops measured 4x slower).
    """

    kind = "static"  # what /info reports

    def __init__(self, translator: Engine, window_s: float, max_tokens: int, calls_at_once: int = 1) -> None:
        self.translator, self.window_s = translator, window_s
        # beam-expanded source tokens a call collects: the budget, or less where more gains nothing
        self.max_tokens = min(max_tokens, translator.call_tokens or max_tokens)
        self.calls_at_once = calls_at_once  # decode calls in flight together (`decode_calls`)
        self._queue: deque[TranslateJob | CallJob] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        """Decode submitted requests; return once closed and every request is answered. One call
        at a time runs on this thread; more (`calls_at_once`) on threads of their own."""
        with decode_calls(self.calls_at_once) as submit:
            while (jobs := submit.when_free(self._collect)) is not None:
                if isinstance(jobs[0], CallJob):
                    submit(settle, jobs[0].future, jobs[0].fn)
                    continue
                groups: dict[Request, list[TranslateJob]] = {}
                for job in jobs:  # a decode call has one request: beams or languages never mix
                    groups.setdefault(job.request, []).append(job)
                for request, group in groups.items():
                    submit(self._decode, request, group)

    def start(self) -> None:
        """`run()` on a new thread."""
        self._thread = threading.Thread(target=self.run, name="s2s-decode", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop taking requests; `run()` returns once those already submitted are answered (and a
        thread made by `start()` is joined)."""
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        if self._thread is not None:
            self._thread.join()

    def translate(
        self, lines: Sequence[str], request: Request, prefixes: Sequence[str] | None = None
    ) -> Future:
        """A future of `list[Translation]`, one per line, in order, as `request` asks (its language
        checked by the caller: `SourceTokens.language`), each starting with its line's prefix when
        `prefixes` gives one."""
        parts = self.parts(TranslateJob(list(lines), request, prefixes))
        with self._ready:
            for part in parts:
                self._put(part)
        return parts[0].future if len(parts) == 1 else joined([part.future for part in parts])

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

    def _collect(self) -> list[TranslateJob] | list[CallJob] | None:
        """The next batch: one CallJob, or TranslateJobs that arrived close together, within the budget.

        None once closing and nothing is left. Jobs whose futures were cancelled are dropped here.
        """
        with self._ready:
            while True:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    return None
                first = self._take(self._first())
                if first.future.set_running_or_notify_cancel():
                    break
            if isinstance(first, CallJob):
                return [first]
            batch, cost = [first], first.cost
            last = start = time.monotonic()
            while cost < self.max_tokens and not any(isinstance(job, CallJob) for job in self._queue):
                job = self._cheapest()
                if job is None:
                    deadline = min(last + self.window_s, start + MAX_WINDOWS * self.window_s)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closing:
                        break
                    self._ready.wait(remaining)
                    continue
                if cost + job.cost > self.max_tokens:
                    break
                if self._take(job).future.set_running_or_notify_cancel():
                    batch.append(job)
                    cost += job.cost
                    last = time.monotonic()
            return batch

    def _first(self) -> TranslateJob | CallJob:
        """What the next call starts with: a CallJob (the rest of a request already translated),
        else the request that has waited longest once that is `OVERTAKE_S`, else the cheapest."""
        call = next((job for job in self._queue if isinstance(job, CallJob)), None)
        if call is not None:
            return call
        oldest = min(self._queue, key=lambda job: job.queued)
        if time.monotonic() - oldest.queued >= OVERTAKE_S:
            return oldest
        return self._cheapest() or oldest

    def _cheapest(self) -> TranslateJob | None:
        """The cheapest request waiting (the oldest of equals), or None."""
        jobs = [job for job in self._queue if isinstance(job, TranslateJob)]
        return min(jobs, key=lambda job: job.cost) if jobs else None

    def _take(self, job: T) -> T:
        """`job`, out of the queue (found by identity: equal requests are separate jobs); the next
        part of its request waits from now."""
        del self._queue[next(i for i, waiting in enumerate(self._queue) if waiting is job)]
        if isinstance(job, TranslateJob) and job.next_part is not None:
            job.next_part.queued = time.monotonic()
        return job

    def parts(self, job: TranslateJob) -> list[TranslateJob]:
        """`job` as consecutive parts of its lines, each within the call budget (one line at least),
        with their costs: beam-expanded source tokens (with <eos>) of the non-empty lines, 1 at least."""
        todo = [n for n, line in enumerate(job.lines) if line.strip()]
        costs = [0] * len(job.lines)
        encoded = self.translator.tokenizers.src.encode([job.lines[n] for n in todo])
        for n, ids in zip(todo, encoded, strict=True):
            costs[n] = (len(ids) + 1) * job.request.search.beam
        bounds, cost = [0], 0
        for n, line_cost in enumerate(costs):
            if cost + line_cost > self.max_tokens and n > bounds[-1]:
                bounds.append(n)
                cost = 0
            cost += line_cost
        bounds.append(len(job.lines))
        parts = []
        for a, b in itertools.pairwise(bounds):
            prefixes = None if job.prefixes is None else job.prefixes[a:b]
            parts.append(TranslateJob(job.lines[a:b], job.request, prefixes, max(sum(costs[a:b]), 1)))
        for part, following in itertools.pairwise(parts):
            part.next_part, following.queued = following, math.inf  # waits once `part` is taken
        return parts

    def _decode(self, request: Request, jobs: list[TranslateJob]) -> None:
        """Translate the lines of `jobs` in one call and hand each job its own slice of the result."""
        lines = [line for job in jobs for line in job.lines]
        log.debug("decoding %d lines of %d requests", len(lines), len(jobs))
        prefixes = None  # target prefixes, only when a request gives some
        if any(job.prefixes is not None for job in jobs):
            prefixes = [p for job in jobs for p in job.prefixes or [""] * len(job.lines)]
        try:
            results = self.translator.translate(lines, request, 1, prefixes)
        except Exception as e:  # a failed decode fails the requests in it, not the server
            log.exception("decoding a batch failed")
            for job in jobs:
                job.future.set_exception(e)
            return
        start = 0
        for job in jobs:
            job.future.set_result(results[start : start + len(job.lines)])
            start += len(job.lines)


class DecodeCalls:
    """Runs decode calls: on the calling thread when one at a time, else on a pool of `at_once`
    threads, with `when_free` waiting until fewer than that are in flight."""

    def __init__(self, at_once: int) -> None:
        self.at_once, self.in_flight = at_once, 0
        self._pool = ThreadPoolExecutor(at_once, "s2s-decode-call") if at_once > 1 else None
        self._free = threading.Condition()

    def when_free(self, collect: Callable[[], T]) -> T:
        """`collect()` once a call can start at once: requests keep gathering while all are busy."""
        with self._free:
            self._free.wait_for(lambda: self.in_flight < self.at_once)
        return collect()

    def __call__(self, fn: Callable[..., object], *args: Any) -> None:
        if self._pool is None:
            fn(*args)
            return
        with self._free:
            self.in_flight += 1
        self._pool.submit(self._finish, fn, *args)

    def _finish(self, fn: Callable[..., object], *args: Any) -> None:
        try:
            fn(*args)  # settles its own futures, failures included
        finally:
            with self._free:
                self.in_flight -= 1
                self._free.notify_all()

    def close(self) -> None:
        """Wait for the calls in flight."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)


@contextmanager
def decode_calls(at_once: int) -> Iterator[DecodeCalls]:
    calls = DecodeCalls(at_once)
    try:
        yield calls
    finally:
        calls.close()


def joined(parts: list[Future]) -> Future:
    """A future of the parts' results (lists) end to end, or of the first exception; cancelled or
    failed, it cancels the parts that have not started."""
    whole: Future = Future()

    def settled(whole: Future) -> None:  # cancelled or failed: the parts not started are not decoded
        if whole.cancelled() or whole.exception() is not None:
            for part in parts:
                part.cancel()

    whole.add_done_callback(settled)

    def one_done(part: Future) -> None:  # two parts ending together may both settle `whole`: one wins
        if whole.done():
            return
        with contextlib.suppress(InvalidStateError):
            if not part.cancelled() and part.exception() is not None:
                whole.set_exception(part.exception())
            elif all(p.done() and not p.cancelled() for p in parts):
                whole.set_result([result for p in parts for result in p.result()])

    for part in parts:
        part.add_done_callback(one_done)
    return whole


def settle(future: Future, fn: Callable[[], Any]) -> None:
    """The future gets fn's result, or its exception (the worker keeps serving other requests)."""
    try:
        future.set_result(fn())
    except Exception as e:  # whatever went wrong belongs to this request
        log.exception("a model call failed")
        future.set_exception(e)
