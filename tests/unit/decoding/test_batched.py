"""Decoding many sources at once: batches decoded together on a CPU give what batches decoded in turn
give, the threads shared evenly; no sources give no hypotheses."""

import threading

import pytest
import torch

from seq2seq.batching import pad
from seq2seq.decoding.answers import ANSWERS
from seq2seq.decoding.batched import decode_ids
from seq2seq.decoding.settings import SearchSettings
from seq2seq.special import EOS
from tests.conftest import make_model, random_ids
from tests.unit.decoding.test_search import EosBiased, ends_early, settings


class ThreadRecorder(EosBiased):
    """EosBiased that also records which thread decoded, and with how many intra-op threads."""

    def __init__(self, model) -> None:
        super().__init__(model)
        self.seen: set[tuple[str, int]] = set()

    def decode(self, tgt, memory, cache=None):
        self.seen.add((threading.current_thread().name, torch.get_num_threads()))
        return super().decode(tgt, memory, cache)


def test_batches_decoded_at_once_on_a_cpu_equal_batches_decoded_in_turn():
    """decode_ids runs as many batches as torch has threads, one core each; nothing else changes."""
    sources = [random_ids(1, n, seed=n)[0].tolist() for n in (3, 9, 5, 12, 4, 7, 8, 6)]
    s = settings(beam=3, nbest=2, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        in_turn = decode_ids(ThreadRecorder(make_model(seed=8)), sources, s, 20, torch.device("cpu"))
        torch.set_num_threads(3)
        model = ThreadRecorder(make_model(seed=8))
        at_once = decode_ids(model, sources, s, 20, torch.device("cpu"))  # 8 batches of one source
        assert torch.get_num_threads() == 3  # restored afterwards
    finally:
        torch.set_num_threads(before)
    names = {name for name, _ in model.seen}
    assert len(names) > 1 and all(name.startswith("s2s-decode") for name in names)
    assert {threads for _, threads in model.seen} == {1}
    assert ends_early(in_turn, pad([[*x, EOS] for x in sources]), s)
    assert [[h.tokens for h in n] for n in at_once] == [[h.tokens for h in n] for n in in_turn]
    assert [[h.score for h in n] for n in at_once] == [[h.score for h in n] for n in in_turn]


def test_batches_at_once_share_the_threads_evenly():
    """`at_once` 2 of 4 threads: two decoding threads of two intra-op threads each; 1: one batch at a
    time on all four, in the calling thread. The hypotheses are the same."""
    sources = [random_ids(1, n, seed=n)[0].tolist() for n in (3, 9, 5, 12, 4, 7)]
    s = settings(beam=2, nbest=1, length_penalty=1.0, max_len_a=1.0, max_len_b=4)
    before = torch.get_num_threads()
    found, seen = {}, {}
    try:
        torch.set_num_threads(4)
        for at_once in (1, 2):
            model = ThreadRecorder(make_model(seed=8))
            found[at_once] = decode_ids(model, sources, s, 20, torch.device("cpu"), at_once=at_once)
            seen[at_once] = model.seen
        assert torch.get_num_threads() == 4
    finally:
        torch.set_num_threads(before)
    assert seen[1] == {(threading.current_thread().name, 4)}
    assert {threads for _, threads in seen[2]} == {2} and len({name for name, _ in seen[2]}) == 2
    assert [[h.tokens for h in n] for n in found[1]] == [[h.tokens for h in n] for n in found[2]]


@pytest.mark.parametrize("task", ["translate", "classify", "tag"])
def test_no_sources_decode_to_no_hypotheses(task):
    """What a chunk of blank lines leaves to decode: nothing, which is an answer, not an error."""
    assert decode_ids(make_model(), [], SearchSettings(), 20, torch.device("cpu"), ANSWERS[task]) == []
