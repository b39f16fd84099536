"""Minimum Bayes risk ranks a beam by expected utility: the consensus of likely hypotheses wins over
an outlier the model scores highest, one hypothesis is left as it is, n-best lists are the beam
re-ranked, and the option is checked where the decode options are."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from seq2seq.config import DecodeConfig
from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.lines import Translation
from seq2seq.translate.mbr import MinimumBayesRisk, expected_utilities, utility
from seq2seq.translate.options import DecodeOverrides, decode_options
from seq2seq.translate.request import Request
from tests.helpers import run_cli

BEAM = [
    ("a cat sits on a red mat", -1.0),  # the model's best, unlike the others
    ("the dog sits on the green mat", -1.2),
    ("the dog sits on a green mat", -1.3),
    ("the dog is sitting on the green mat", -1.4),
]


class Scripted:
    """A line translator whose every line gets the beam above (its first n-best of it)."""

    def __init__(self) -> None:
        self.asked: list[Request] = []

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        self.asked.append(request)
        kept = BEAM[: request.search.nbest]
        return [
            Translation([t for t, _ in kept], [s for _, s in kept]) if line else Translation([], [])
            for line in lines
        ]


def test_the_consensus_wins_over_the_models_outlier_and_the_beam_is_searched_whole():
    scripted = Scripted()
    request = Request(SearchSettings(beam=4, nbest=2), 100)
    found = MinimumBayesRisk(scripted, "chrf").translate(["ein Satz", ""], request)
    assert scripted.asked[0].search.nbest == 4  # the whole beam
    assert found[0].texts[0].startswith("the dog") and "a cat sits on a red mat" not in found[0].texts
    assert len(found[0].texts) == 2 and found[1].texts == []
    scores = dict(BEAM)
    assert found[0].scores == [scores[t] for t in found[0].texts]  # each keeps the search's score


@pytest.mark.parametrize("name", ["chrf", "bleu"])
def test_one_hypothesis_is_left_as_it_is(name):
    assert expected_utilities(["only one"], [-3.0], utility(name)) == [pytest.approx(100.0)]


def test_a_likelier_hypothesis_weighs_more():
    score = utility("chrf")
    texts = ["x y z", "a b c"]
    even = expected_utilities(texts, [-1.0, -1.0], score)
    assert even[0] == pytest.approx(even[1])
    tilted = expected_utilities(texts, [-1.0, -5.0], score)
    assert tilted[0] > tilted[1]


def test_the_option_is_checked_with_the_decode_options():
    assert decode_options(DecodeOverrides(beam=4, mbr="bleu"), DecodeConfig()).rerank.mbr == "bleu"
    with pytest.raises(Seq2SeqError, match="--mbr 'ter': choose one of chrf, bleu"):
        decode_options(DecodeOverrides(mbr="ter"), DecodeConfig())
    with pytest.raises(Seq2SeqError, match="--mbr and --rerank choose among a beam"):
        decode_options(DecodeOverrides(mbr="chrf", sampling=True), DecodeConfig())


def test_translate_with_mbr_gives_one_line_per_input_line(tiny_run, tmp_path):
    src, out = tiny_run.data / "valid.src", tmp_path / "out.txt"
    result = run_cli(
        "translate",
        str(tiny_run.run),
        "-i",
        str(src),
        "-o",
        str(out),
        "--beam",
        "3",
        "--mbr",
        "chrf",
        "--engine",
        "s2s",
        "--device",
        "cpu",
    )
    assert result.exit_code == 0, result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(
        src.read_text(encoding="utf-8").splitlines()
    )
    refused = run_cli("translate", str(tiny_run.run), "--mbr", "chrf", "--alignments", input="a b\n")
    assert refused.exit_code == 2 and "error: --mbr and --rerank rank whole translations" in refused.output
