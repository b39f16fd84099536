"""Continuous batching: each request's sentences join the running decode at the next step, and leave
it when settled, so no request waits for a batch it was not part of (`decoding.continuous`).

The worker thread loops: take every request that has arrived (an attention map runs at once, between
two steps), admit waiting sentences, oldest first, while the beam-expanded source tokens in flight
stay within `max_tokens` (as `decode.max_tokens` budgets an offline batch; one sentence is always
admitted), then step each running batch once (one per search setting: beams never mix) and answer
each request whose last sentence has settled. A sentence's hypotheses are those `s2s translate`
finds for it (the same search, `RunningSearch`). A failed step fails the requests with a sentence in
that batch, and the server goes on.
"""

from __future__ import annotations

import logging
from collections import deque
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from seq2seq.decoding.continuous import RunningSearch, Sentence
from seq2seq.decoding.search import Hypothesis, SearchSettings
from seq2seq.device import autocast
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


@dataclass
class _Waiting:
    """A sentence not yet admitted, and its search."""

    sentence: Sentence
    settings: SearchSettings

    @property
    def cost(self) -> int:
        """The beam-expanded source tokens it will hold (`RunningSearch.source_tokens`)."""
        return len(self.sentence.source) * self.settings.beam


class ContinuousBatcher(Batcher):
    """`Batcher`'s interface (`translate`, `call`, `run`, `start`, `close`) over running batches.

    `translator` must be an encoder-decoder run's (`RunningSearch` joins sentences into its model).
    """

    kind = "continuous"

    def __init__(self, translator: Translator, max_tokens: int) -> None:
        super().__init__(translator, 0.0, max_tokens)
        self._running: dict[SearchSettings, RunningSearch] = {}
        self._waiting: deque[_Waiting] = deque()  # sentences accepted, not yet admitted

    def run(self) -> None:
        """Decode submitted requests on this thread; return once closed and every request is answered."""
        while (jobs := self._arrived()) is not None:
            for job in jobs:
                if isinstance(job, CallJob):
                    settle(job.future, self._starting(job))
                else:
                    self._accept(job)
            self._admit()
            for settings in list(self._running):
                self._step(settings)

    def _arrived(self) -> list[TranslateJob | CallJob] | None:
        """Every job submitted since the last step (waiting for one when nothing is decoding); None
        once closing and all is answered. Jobs whose futures were cancelled are dropped here."""
        with self._ready:
            while not self._queue and not self._busy and not self._closing:
                self._ready.wait()
            if not self._queue and not self._busy:
                return None
            jobs = list(self._queue)
            self._queue.clear()
        return [job for job in jobs if job.future.set_running_or_notify_cancel()]

    @property
    def _busy(self) -> bool:
        return bool(self._running or self._waiting)

    def _accept(self, job: TranslateJob) -> None:
        """Tokenize the job's lines (their sources start for its language) and queue its sentences."""
        try:
            self._start(job.to)
            todo, sources, prefixes = self.translator.inputs(job.lines, prefixes=job.prefixes)
        except Exception as e:  # a request that cannot be read fails alone
            log.exception("reading a request failed")
            job.future.set_exception(e)
            return
        request = _Request(job, len(todo))
        if not todo:
            self._answer(request)
        for n, (line, source) in enumerate(zip(todo, sources)):
            sentence = Sentence([*source, EOS], prefixes[n] if prefixes else [], (request, line))
            self._waiting.append(_Waiting(sentence, job.settings))

    def _admit(self) -> None:
        """Move waiting sentences, oldest first, into the running batches while the budget allows."""
        joining: dict[SearchSettings, list[_Waiting]] = {}
        in_flight = sum(search.source_tokens for search in self._running.values())
        while self._waiting and (
            in_flight + self._waiting[0].cost <= self.max_tokens or not (self._running or joining)
        ):
            waiting = self._waiting.popleft()
            joining.setdefault(waiting.settings, []).append(waiting)
            in_flight += waiting.cost
        for settings, group in joining.items():
            search = self._running.get(settings)
            if search is None:
                search = self._running[settings] = RunningSearch(
                    self.translator.model, settings, self.translator.device
                )
            try:
                with self._precision():
                    search.join([w.sentence for w in group])
            except Exception as e:  # the batch may be half joined: it fails whole
                self._fail(settings, e, [w.sentence for w in group])

    def _step(self, settings: SearchSettings) -> None:
        search = self._running[settings]
        try:
            with self._precision():
                settled = search.step()
        except Exception as e:
            self._fail(settings, e, [])
            return
        for (request, line), hyps in settled:
            request.found[line] = hyps
            request.waiting -= 1
            if request.waiting == 0:
                self._answer(request)
        if not search:
            del self._running[settings]

    def _answer(self, request: _Request) -> None:
        job = request.job
        try:
            result = self.translator.translations(len(job.lines), job.settings.nbest, request.found)
        except Exception as e:
            log.exception("writing a translation failed")
            job.future.set_exception(e)
            return
        job.future.set_result(result)

    def _fail(self, settings: SearchSettings, error: Exception, joining: list[Sentence]) -> None:
        """Fail every request with a sentence in the running batch of `settings` (or `joining` it),
        and drop the batch."""
        log.error("decoding a batch failed", exc_info=error)
        search = self._running.pop(settings)
        failed = {request for request, _ in [block.key for block in search.blocks] + [s.key for s in joining]}
        for request in failed:
            if not request.job.future.done():
                request.job.future.set_exception(error)
        # the failed requests' sentences still waiting are dropped too
        self._waiting = deque(w for w in self._waiting if w.sentence.key[0] not in failed)

    def _precision(self) -> AbstractContextManager[None]:
        """The translator's precision, as `Translator.decode_ids` runs it."""
        return autocast(self.translator.device, self.translator.autocast_to)
