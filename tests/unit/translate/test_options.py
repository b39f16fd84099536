"""`decode_options`: the one merge of a command line (or a server request) with the run's decode config."""

from __future__ import annotations

import dataclasses

import pytest

from seq2seq.config import DecodeConfig
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.options import DecodeOverrides, decode_options

DECODE = DecodeConfig(beam=4, length_penalty=0.6, max_len_a=1.2, max_len_b=7, min_len=2, max_tokens=900)


def test_nothing_asked_gives_the_run_config_the_best_checkpoint_and_its_budget():
    options = decode_options(DecodeOverrides(), DECODE)
    search = options.search
    assert (search.beam, search.nbest, search.length_penalty) == (4, 1, 0.6)
    assert (search.max_len_a, search.max_len_b, search.min_len, search.no_repeat_ngram) == (1.2, 7, 2, 0)
    assert not search.sampling
    assert options.max_tokens == 900 and options.checkpoints == ("best",)


def test_what_is_asked_wins_over_the_config():
    asked = DecodeOverrides(beam=2, length_penalty=0.0, max_len_b=0, min_len=0, max_tokens=50)
    options = decode_options(dataclasses.replace(asked, checkpoints=("last", "averaged")), DECODE)
    assert (options.search.beam, options.search.length_penalty) == (2, 0.0)
    assert (options.search.max_len_b, options.search.min_len) == (0, 0)  # 0 is asked, not "unset"
    assert options.max_tokens == 50 and options.checkpoints == ("last", "averaged")


@pytest.mark.parametrize("beam", [None, 1, 3])
def test_an_nbest_above_the_beam_raises_the_beam(beam):
    search = decode_options(DecodeOverrides(beam=beam, nbest=6), DECODE).search
    assert (search.beam, search.nbest) == (6, 6)
    assert decode_options(DecodeOverrides(beam=8, nbest=3), DECODE).search.beam == 8


def test_sampling_implies_beam_1_and_keeps_its_knobs():
    asked = DecodeOverrides(sampling=True, temperature=0.7, top_k=5, top_p=0.9, seed=3)
    search = decode_options(asked, DECODE).search  # the config's beam 4 gives way
    assert (search.beam, search.nbest, search.sampling) == (1, 1, True)
    assert (search.temperature, search.top_k, search.top_p, search.seed) == (0.7, 5, 0.9, 3)


@pytest.mark.parametrize("asked", [DecodeOverrides(beam=2), DecodeOverrides(nbest=2)])
def test_sampling_refuses_a_beam_or_an_nbest(asked):
    with pytest.raises(Seq2SeqError, match="--sampling draws one translation"):
        decode_options(dataclasses.replace(asked, sampling=True), DECODE)
    assert decode_options(DecodeOverrides(beam=1, sampling=True), DECODE).search.beam == 1


@pytest.mark.parametrize("knob", [{"temperature": 0.5}, {"top_k": 3}, {"top_p": 0.5}, {"seed": 0}])
def test_a_sampling_knob_without_sampling_is_an_error(knob):
    with pytest.raises(Seq2SeqError, match="apply to --sampling; add it"):
        decode_options(DecodeOverrides(**knob), DECODE)


@pytest.mark.parametrize("beam, nbest", [(None, 1), (None, 3), (2, 1), (2, 5), (6, 2)])
def test_a_server_request_gets_the_settings_the_command_line_would(beam, nbest):
    pytest.importorskip("fastapi")
    from seq2seq.serve.limits import request_search
    from seq2seq.serve.server_settings import Limits

    server = DecodeOverrides(length_penalty=0.2, max_tokens=100)
    cli = decode_options(dataclasses.replace(server, beam=beam, nbest=nbest), DECODE).search
    assert request_search(server, DECODE, beam, nbest, Limits(max_beam=16)) == cli


def test_a_server_request_over_max_beam_is_refused_after_the_nbest_raised_the_beam():
    pytest.importorskip("fastapi")
    from seq2seq.serve.limits import ApiError, request_search
    from seq2seq.serve.server_settings import Limits

    assert request_search(DecodeOverrides(), DECODE, 2, 4, Limits(max_beam=4)).beam == 4
    with pytest.raises(ApiError, match="at most 4"):
        request_search(DecodeOverrides(), DECODE, 2, 5, Limits(max_beam=4))
    with pytest.raises(ApiError, match="at most 3"):  # the server's own beam counts too
        request_search(DecodeOverrides(), DECODE, None, 1, Limits(max_beam=3))
