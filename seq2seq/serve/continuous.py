"""Continuous batching: each request's sentences join a running decode at the next step, and leave
it when settled, so no request waits for a batch it was not part of (`decoding.running_search`).

The decoding runs in lanes: on a CPU one per torch thread, each a thread with one core of its own
(as `s2s translate` decodes one batch per core: a step's tensors are too small to keep two cores
busy one operation at a time, and while one lane runs Python between its operations the other
computes); on a GPU one. Each lane loops: take every request that has arrived (tokenized, its
sentences queued oldest first; an attention map runs at once, between two steps), admit waiting
sentences while it is the least loaded lane and its beam-expanded source tokens in flight stay
within `max_tokens` (as `decode.max_tokens` budgets an offline batch; a lane with nothing running
takes one sentence whatever its size), then step each of its running batches once (one per search
setting: beams never mix) and answer each request whose last sentence has settled. A sentence's
hypotheses are those `s2s translate` finds for it (the same search, `RunningSearch`), whichever lane
and sentences it runs with. A failed step fails the requests with a sentence in that batch, and the
server goes on.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future, InvalidStateError
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import torch

from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.running_search import RunningSearch, Sentence
from seq2seq.decoding.settings import SearchSettings
from seq2seq.device import autocast
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.ensemble import Ensemble
from seq2seq.serve.batcher import Batcher, CallJob, TranslateJob, settle
from seq2seq.special import EOS
from seq2seq.translate.translator import Translator

log = logging.getLogger(__name__)


@dataclass(eq=False)  # hashed by identity: a request is the key of its sentences
class _Request:
    """A translate job being decoded: its lines' hypotheses arrive one sentence at a time."""

    job: TranslateJob
    waiting: int  # sentences not yet settled
    found: dict[int, list[Hypothesis]] = field(default_factory=dict)  # line index -> hypotheses


_Key = tuple[_Request, int]  # a sentence's request and line index


@dataclass
class _Waiting:
    """A sentence not yet admitted, and its search."""

    sentence: Sentence[_Key]
    settings: SearchSettings

    @property
    def cost(self) -> int:
        """The beam-expanded source tokens it will hold (`RunningSearch.source_tokens`)."""
        return len(self.sentence.source) * self.settings.beam


@dataclass
class _Lane:
    """One decoding thread's running batches, one per search setting."""

    running: dict[SearchSettings, RunningSearch[_Key, Any, Any]] = field(default_factory=dict)
    joining: int = 0  # source tokens admitted, not yet joined
    stopped: bool = False  # its thread has returned (closing)

    @property
    def tokens(self) -> int:
        """Beam-expanded source tokens in flight (`RunningSearch.source_tokens`)."""
        return self.joining + sum(search.source_tokens for search in self.running.values())


class ContinuousBatcher(Batcher):
    """`Batcher`'s interface (`translate`, `call`, `run`, `start`, `close`) over running batches.

    `translator` must be an encoder-decoder run's (`RunningSearch` joins sentences into its model).
    `lanes`: decoding threads (0: one per torch thread on a CPU, one on a GPU); each has an equal
    share of the torch threads.
    """

    kind = "continuous"
    translator: Translator  # a run's: its model joins sentences into a running search

    def __init__(self, translator: Translator, max_tokens: int, lanes: int = 0) -> None:
        super().__init__(translator, 0.0, max_tokens)
        self._cores = torch.get_num_threads()
        self.lanes = (lanes or self._cores) if translator.device.type == "cpu" else 1
        self._waiting: deque[_Waiting] = deque()  # sentences accepted, not yet admitted
        self._lanes = [_Lane() for _ in range(self.lanes)]
        self._intake = threading.Lock()  # reading requests and calls set the translator's language

    def parts(self, job: TranslateJob) -> list[TranslateJob]:
        """The request whole: its sentences join the running searches one by one."""
        return [job]

    def run(self) -> None:
        """Decode submitted requests on this thread and `lanes - 1` more; return once closed and every
        request is answered."""
        before = torch.get_num_threads()
        others = [
            threading.Thread(target=self._decode_lane, args=(lane,), name=f"s2s-lane-{n + 1}", daemon=True)
            for n, lane in enumerate(self._lanes[1:])
        ]
        for thread in others:
            thread.start()
        try:
            self._decode_lane(self._lanes[0])
        finally:
            for thread in others:
                thread.join()
            torch.set_num_threads(before)

    def _decode_lane(self, lane: _Lane) -> None:
        # a fixed share: lanes whose thread counts changed with the load stalled each other (measured
        # at 8 clients: 40x slower)
        if self.lanes > 1:
            torch.set_num_threads(max(self._cores // self.lanes, 1))
        while (work := self._next(lane)) is not None:
            jobs, calls = work
            if jobs:
                self._accept(jobs)
            for job in calls:
                with self._intake:
                    settle(job.future, job.fn)
            joining = self._admit(lane)
            for settings, group in joining.items():
                self._join(lane, settings, group)
            for settings in list(lane.running):
                self._step(lane, settings)

    def _next(self, lane: _Lane) -> tuple[list[TranslateJob], list[CallJob]] | None:
        """The requests and calls submitted since any lane last looked (waiting while this lane has
        nothing to do); None once closing and all is answered. Cancelled ones are dropped here."""
        with self._ready:
            while not (self._queue or self._waiting or lane.running or self._closing):
                self._ready.wait()
            if self._closing and not (self._queue or self._waiting or lane.running):
                lane.stopped = True  # no longer counted as the least loaded (`_admit`)
                self._ready.notify_all()  # the other lanes finish theirs and stop too
                return None
            jobs = [job for job in self._queue if job.future.set_running_or_notify_cancel()]
            self._queue.clear()
        translate = [job for job in jobs if isinstance(job, TranslateJob)]
        return translate, [job for job in jobs if isinstance(job, CallJob)]

    def _put(self, job: TranslateJob | CallJob) -> Future:
        with self._ready:
            if self._closing:
                raise RuntimeError("the batcher is closed")
            self._queue.append(job)
            self._ready.notify_all()  # any idle lane may take it
        return job.future

    def _accept(self, jobs: list[TranslateJob]) -> None:
        """Tokenize the jobs' lines (their sources start as each job's request asks) and queue their
        sentences, oldest first."""
        accepted = []
        with self._intake:
            for job in jobs:
                try:
                    todo, sources, prefixes = self.translator.front.inputs(
                        job.lines, job.request, prefixes=job.prefixes
                    )
                except Exception as e:  # a request that cannot be read fails alone
                    log.exception("reading a request failed")
                    job.future.set_exception(e)
                    continue
                request = _Request(job, len(todo))
                if not todo:
                    self._answer(request)
                for n, (line, source) in enumerate(zip(todo, sources, strict=True)):
                    sentence = Sentence([*source, EOS], prefixes[n] if prefixes else [], (request, line))
                    accepted.append(_Waiting(sentence, job.request.search))
        with self._ready:
            self._waiting.extend(accepted)
            self._ready.notify_all()

    def _admit(self, lane: _Lane) -> dict[SearchSettings, list[_Waiting]]:
        """Waiting sentences, oldest first, for this lane while it is the least loaded and within the
        budget (one at least when it has nothing running), by search setting."""
        joining: dict[SearchSettings, list[_Waiting]] = {}
        with self._ready:
            while self._waiting and lane.tokens <= min(o.tokens for o in self._lanes if not o.stopped):
                cost = self._waiting[0].cost
                if lane.tokens + cost > self.max_tokens and (lane.running or joining):
                    break
                waiting = self._waiting.popleft()
                joining.setdefault(waiting.settings, []).append(waiting)
                lane.joining += cost
        return joining

    def _join(self, lane: _Lane, settings: SearchSettings, group: list[_Waiting]) -> None:
        try:
            with self._ready:  # other lanes count this lane's tokens
                search = lane.running.get(settings)
                if search is None:
                    model = self.translator.model  # of a family that joins running batches (`batcher_for`)
                    assert isinstance(model, Seq2SeqTransformer | Ensemble)
                    search = lane.running[settings] = RunningSearch(model, settings, self.translator.device)
            with self._precision():
                search.join([w.sentence for w in group])
        except Exception as e:  # the batch may be half joined: it fails whole
            self._fail(lane, settings, e, [w.sentence for w in group])
        finally:
            with self._ready:
                lane.joining -= sum(w.cost for w in group)

    def _step(self, lane: _Lane, settings: SearchSettings) -> None:
        search = lane.running[settings]
        try:
            with self._precision():
                settled = search.step()
        except Exception as e:
            self._fail(lane, settings, e, [])
            return
        answered = []
        with self._ready:
            if not search:
                del lane.running[settings]
            for (request, line), hyps in settled:
                request.found[line] = hyps
                request.waiting -= 1
                if request.waiting == 0:
                    answered.append(request)
        for request in answered:
            self._answer(request)

    def _answer(self, request: _Request) -> None:
        job = request.job  # never failed: a failed request keeps a sentence that never settles
        try:
            nbest, keep_unk = job.request.search.nbest, job.request.keep_unk
            result = self.translator.front.translations(len(job.lines), nbest, request.found, keep_unk)
        except Exception as e:
            log.exception("writing a translation failed")
            job.future.set_exception(e)
            return
        job.future.set_result(result)

    def _fail(
        self, lane: _Lane, settings: SearchSettings, error: Exception, joining: list[Sentence[_Key]]
    ) -> None:
        """Fail every request with a sentence in this lane's running batch of `settings` (or `joining`
        it), and drop the batch."""
        log.error("decoding a batch failed", exc_info=error)
        with self._ready:
            search = lane.running.pop(settings, None)  # None: it could not be made
            keys = [block.key for block in search.blocks] if search is not None else []
            failed = {request for request, _ in keys + [s.key for s in joining]}
            # the failed requests' sentences still waiting are dropped too
            self._waiting = deque(w for w in self._waiting if w.sentence.key[0] not in failed)
        for request in failed:
            try:
                request.job.future.set_exception(error)
            except InvalidStateError:  # another lane's failed batch held one of its sentences too
                pass

    def _precision(self) -> AbstractContextManager[None]:
        """The translator's precision, as `Translator.decode_ids` runs it."""
        return autocast(self.translator.device, self.translator.autocast_to)
