"""Decoding many sources at once: length-sorted batches, one per CPU core, results in input order.

What `s2s translate` and validation during training share; the search itself is `seq2seq.decoding.search`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from seq2seq.batching import pad, token_batches
from seq2seq.decoding.answers import SEARCHED, Answers
from seq2seq.decoding.decodable import Decodable
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.ladder import held_size_within
from seq2seq.decoding.prefix import Forced
from seq2seq.decoding.settings import SearchSettings
from seq2seq.device import autocast
from seq2seq.models.encoder_only import EncoderOnlyTransformer
from seq2seq.special import EOS

Answerable = Decodable[Any, Any] | EncoderOnlyTransformer  # a model that is searched, or read


def decode_ids(
    model: Answerable,
    sources: Sequence[Sequence[int]],
    settings: SearchSettings,
    max_tokens: int,
    device: torch.device,
    dtype: torch.dtype | None = None,
    answers: Answers[Any] = SEARCHED,
    at_once: int = 0,
    prefixes: Sequence[Sequence[int]] | None = None,
) -> list[list[Hypothesis]]:
    """Hypotheses for each source (token ids without <eos>), in input order; with `prefixes` (target
    ids, one sequence per source, empty for none) each output starts with its source's prefix.

    Sources are sorted by length into batches of about `max_tokens` source tokens (each of a size the
    search holds its batches at, `ladder.held_rows`), so little work is spent on padding; results
    are written back to their input positions. On a CPU, as many batches as torch has threads are
    decoded at once, each on one core (like CTranslate2's inter_threads):
    a decoding step's tensors are too small to keep several cores busy one operation at a time.
    A reader's run is read in one pass instead of searched (its `answers`). `at_once` sets
    how many batches a CPU decodes together (0 = one per torch thread), each on an equal share of the
    threads: what the benchmark's grid varies.
    """
    results: list[list[Hypothesis]] = [[] for _ in sources]
    # budget the expected beam work: each source row is expanded into `beam` decoder rows
    budget = max(max_tokens // settings.beam, 1)
    # each batch starts at a size the search holds (`held_rows`): fewer product shapes, less memory
    batches = token_batches([len(s) + 1 for s in sources], budget, size_to=held_size_within)

    @torch.no_grad()
    def decode(batch: Sequence[int]) -> list[list[Hypothesis]]:
        src = pad([[*sources[i], EOS] for i in batch]).to(device)
        prefix = Forced.of([prefixes[i] for i in batch], device) if prefixes else None
        with autocast(device, dtype):  # thread-local, like no_grad: set in the thread that decodes
            return answers(model, src, settings, prefix)

    cores = torch.get_num_threads()
    workers = min(at_once or cores, cores, len(batches)) if device.type == "cpu" else 1
    with _shared_cores(workers, cores // max(workers, 1)) as mapper:
        for batch, hyps in zip(batches, mapper(decode, batches), strict=True):
            for i, h in zip(batch, hyps, strict=True):
                results[i] = h
    return results


@contextlib.contextmanager
def _shared_cores(workers: int, each: int) -> Iterator[Callable[..., Iterator]]:
    """A `map` over `workers` decoding threads with `each` intra-op threads (below 2: plain `map`)."""
    if workers < 2:
        yield map
        return
    before = torch.get_num_threads()
    torch.set_num_threads(each)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="s2s-decode")
    try:
        yield pool.map
    finally:
        pool.shutdown(cancel_futures=True)  # on an error or Ctrl-C, start no further batch
        torch.set_num_threads(before)
