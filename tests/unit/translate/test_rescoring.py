"""The noisy channel reranks a beam by the search's score plus the weighted reverse score: a hypothesis
the reverse run finds likely overtakes the search's best, weight 0 keeps the search's order, a blank
hypothesis ranks last, n-best lists are the beam reranked, and the option is checked where the decode
options are; through the command line it gives one line per input line and refuses what it cannot do
before writing anything."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import pytest

from seq2seq.config import DecodeConfig
from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import Seq2SeqError
from seq2seq.translate import rescoring
from seq2seq.translate.lines import BLANK, Translation
from seq2seq.translate.options import DecodeOverrides, Rerank, decode_options
from seq2seq.translate.request import Request
from seq2seq.translate.rescoring import Judge, Rescored
from seq2seq.translate.scoring import PairScore
from tests.helpers import run_cli
from tests.unit.translate.test_mbr import BEAM, Scripted

# the reverse run's log-probabilities of the source per token, given each hypothesis of BEAM
REVERSE = {
    "a cat sits on a red mat": [-3.0, -3.0],  # the search's best explains the source badly
    "the dog sits on the green mat": [-0.5, -0.5],
    "the dog sits on a green mat": [-1.0, -1.0],
    "the dog is sitting on the green mat": [-2.0, -2.0],
}


@pytest.fixture
def reverse_scores(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], list[str]]]:
    """The reverse run replaced by REVERSE; returns the (hypotheses, sources) it was asked to score."""
    asked: list[tuple[list[str], list[str]]] = []

    def scored(reverse: object, hypotheses: Sequence[str], sources: Sequence[str], *_: object) -> list:
        asked.append((list(hypotheses), list(sources)))
        return [
            PairScore(REVERSE[h]) if h.strip() and s.strip() else PairScore([], BLANK)
            for h, s in zip(hypotheses, sources, strict=True)
        ]

    monkeypatch.setattr(rescoring, "score_pairs", scored)
    return asked


class Budget:
    """What Rescored reads of the reverse run besides its scores: its batch budget."""

    class config:  # noqa: N801 - the shape of Translator.config
        class decode:  # noqa: N801
            max_tokens = 100

        class model:  # noqa: N801
            right_to_left = False


def test_what_the_reverse_run_finds_likely_overtakes_the_searchs_best(reverse_scores):
    scripted = Scripted()
    request = Request(SearchSettings(beam=4, nbest=2), 100)
    found = Rescored(scripted, [Judge(Budget(), 1.0)]).translate(["ein Hund", ""], request)  # type: ignore[arg-type]
    assert scripted.asked[0].search.nbest == 4  # the whole beam
    # -1.2 + 1 x -0.5 = -1.7 beats -1.3 - 1.0 = -2.3 and the search's best, -1.0 - 3.0 = -4.0
    assert found[0].texts == ["the dog sits on the green mat", "the dog sits on a green mat"]
    assert found[0].scores == [-1.2, -1.3]  # each keeps the search's score
    assert found[1].texts == []
    hypotheses, sources = reverse_scores[0]
    assert hypotheses == [t for t, _ in BEAM] and sources == ["ein Hund"] * 4  # scored the other way


def test_weight_zero_keeps_the_searchs_order_and_a_blank_hypothesis_ranks_last(reverse_scores):
    class WithBlank(Scripted):
        def translate(self, lines, request, first_line=1, prefixes=None):
            found = super().translate(lines, request, first_line, prefixes)
            return [Translation(["", *t.texts[1:]], [None, *t.scores[1:]]) for t in found]

    request = Request(SearchSettings(beam=4, nbest=4), 100)
    found = Rescored(Scripted(), [Judge(Budget(), 0.0)]).translate(["ein Hund"], request)  # type: ignore[arg-type]
    assert found[0].texts == [t for t, _ in BEAM]
    blank = Rescored(WithBlank(), [Judge(Budget(), 1.0)]).translate(["ein Hund"], request)  # type: ignore[arg-type]
    assert blank[0].texts[-1] == ""


def test_the_option_is_checked_with_the_decode_options():
    options = decode_options(
        DecodeOverrides(beam=4, rerank=("runs/en_de",), rerank_weight=(0.5,)), DecodeConfig()
    )
    assert options.rerank == Rerank(runs=("runs/en_de",), weights=(0.5,))
    assert options.rerank.record() == {"rerank": "runs/en_de", "rerank_weight": 0.5}  # as before several
    two = DecodeOverrides(rerank=("runs/en_de", "runs/r2l"), rerank_weight=(0.5, 3.0))
    assert decode_options(two, DecodeConfig()).rerank.record() == {
        "rerank": ["runs/en_de", "runs/r2l"],
        "rerank_weight": [0.5, 3.0],
    }
    unweighed = decode_options(dataclasses.replace(two, rerank_weight=()), DecodeConfig()).rerank
    assert unweighed.weights == ()  # not weighed yet: `rerank_weight_of` weighs them from their configs
    for asked, message in [
        (DecodeOverrides(rerank=("r",), mbr="chrf"), "--mbr and --rerank each choose from the beam"),
        (DecodeOverrides(rerank=("r",), sampling=True), "--sampling draws one"),
        (
            DecodeOverrides(rerank_weight=(0.5,)),
            "--rerank-weight weighs the run of --rerank RUN: add it",
        ),
        (
            dataclasses.replace(two, rerank_weight=(0.5,)),
            r"--rerank-weight: 1 weight\(s\) for 2 --rerank run\(s\): give one for each run",
        ),
        (DecodeOverrides(rerank=("runs/r2l", "runs/../runs/r2l")), "--rerank runs/r2l is named twice"),
    ]:
        with pytest.raises(Seq2SeqError, match=message):
            decode_options(asked, DecodeConfig())


def test_translate_with_a_reverse_run_gives_one_line_per_input_line(tiny_run, tmp_path):
    """The tiny run stands in for its own reverse run (its vocabulary is joint): the plumbing, not
    the quality. Each n-best list is the beam reranked, with the search's scores."""
    src, out = tiny_run.data / "valid.src", tmp_path / "out.txt"
    run = str(tiny_run.run)
    common = ["-i", str(src), "--beam", "3", "--engine", "s2s", "--device", "cpu"]
    result = run_cli("translate", run, *common, "-o", str(out), "--rerank", run, "--nbest", "2", "--scores")
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(src.read_text(encoding="utf-8").splitlines())
    plain = run_cli("translate", run, *common, "--nbest", "3", "--scores")
    assert plain.exit_code == 0, plain.output
    for reranked, beam in zip(lines, plain.stdout.splitlines(), strict=True):
        assert set(reranked.split("\t")) <= set(beam.split("\t"))  # the same hypotheses and scores
    missing = run_cli(
        "translate", run, *common, "-o", str(tmp_path / "no.txt"), "--rerank", str(tmp_path / "x")
    )
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    assert not (tmp_path / "no.txt").exists()


def test_evaluate_records_the_reverse_run_and_loads_it_once(tiny_run, tmp_path, monkeypatch):
    """The set as given and its modified copies (--augment) are reranked by one loaded reverse run."""
    loaded = []
    load = Rescored.load.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Rescored, "load", classmethod(lambda cls, *a: loaded.append(a) or load(cls, *a)))
    run, report = str(tiny_run.run), tmp_path / "val.json"
    src, ref = tiny_run.data / "valid.src", tiny_run.data / "valid.tgt"
    args = ["--src", str(src), "--ref", str(ref), "--out", str(tmp_path / "hyp.txt"), "--json", str(report)]
    args += ["--augment", "upper,typos", "--engine", "s2s"]
    result = run_cli("evaluate", run, *args, "--beam", "2", "--rerank", run, "--rerank-weight", "0.5")
    assert result.exit_code == 0, result.output
    decode = json.loads(report.read_text(encoding="utf-8"))["decode"]
    assert decode["rerank"] == run and decode["rerank_weight"] == 0.5 and "mbr" not in decode
    assert len(loaded) == 1


def test_a_right_to_left_run_scores_each_hypothesis_given_the_line(reverse_scores):
    """The same scores from a right-to-left run (model.right_to_left) choose the same way; only the
    pairs it is asked differ: the line, then each hypothesis (as the forward run translates)."""

    def swapped(second: object, sources: Sequence[str], hypotheses: Sequence[str], *_: object) -> list:
        reverse_scores.append((list(hypotheses), list(sources)))
        return [PairScore(REVERSE[h]) for h in hypotheses]

    request = Request(SearchSettings(beam=4, nbest=1), 100)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rescoring, "score_pairs", swapped)
        found = Rescored(Scripted(), [Judge(RightToLeft(), 1.0)]).translate(["ein Hund"], request)  # type: ignore[arg-type]
    assert found[0].texts == ["the dog sits on the green mat"]
    hypotheses, sources = reverse_scores[0]
    assert hypotheses == [t for t, _ in BEAM] and sources == ["ein Hund"] * 4


# a right-to-left run's log-probabilities per token of each hypothesis of BEAM, given the line
SECOND = {
    "a cat sits on a red mat": [-0.1],  # it likes the search's best
    "the dog sits on the green mat": [-1.0],  # and not the reverse run's
    "the dog sits on a green mat": [-0.1],
    "the dog is sitting on the green mat": [-0.1],
}


class RightToLeft(Budget):
    class config(Budget.config):  # noqa: N801
        class model:  # noqa: N801
            right_to_left = True


@pytest.mark.parametrize(
    ("weights", "best"),
    [
        ((1.0, 0.0), "the dog sits on the green mat"),  # -1.2 - 0.5: the reverse run's choice
        ((0.0, 1.0), "a cat sits on a red mat"),  # -1.0 - 0.1: the right-to-left run's
        # -1.3 - 1.0 - 0.1 = -2.4 beats -1.2 - 0.5 - 1.0 = -2.7: neither's alone, and not the best by
        # the larger of the two scores (-1.2 - 1.0 = -2.2 beats -1.3 - 1.0)
        ((1.0, 1.0), "the dog sits on a green mat"),
    ],
)
def test_several_runs_rerank_by_the_sum_of_their_weighted_scores(weights, best):
    """Each second run scores the pairs its way (the reverse run: hypothesis then line; the
    right-to-left run: line then hypothesis), and a hypothesis ranks by the search's score plus every
    run's weighted score."""
    asked: list[tuple[bool, list[str], list[str]]] = []

    def scored(second: Budget, first: Sequence[str], then: Sequence[str], *_: object) -> list:
        r2l = second.config.model.right_to_left
        asked.append((r2l, list(first), list(then)))
        return [PairScore(SECOND[h]) if r2l else PairScore(REVERSE[h]) for h in (then if r2l else first)]

    request = Request(SearchSettings(beam=4, nbest=1), 100)
    judges = [Judge(Budget(), weights[0]), Judge(RightToLeft(), weights[1])]  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rescoring, "score_pairs", scored)
        found = Rescored(Scripted(), judges).translate(["ein Hund"], request)  # type: ignore[arg-type]
    assert found[0].texts == [best]
    hypotheses = [t for t, _ in BEAM]
    assert asked == [(False, hypotheses, ["ein Hund"] * 4), (True, ["ein Hund"] * 4, hypotheses)]


def test_a_hypothesis_one_run_cannot_score_ranks_last_whatever_the_other_says(monkeypatch):
    unreadable = "the dog sits on a green mat"  # the best by the sum (above), if both could read it

    def scored(second: Budget, first: Sequence[str], then: Sequence[str], *_: object) -> list:
        if second.config.model.right_to_left:
            return [PairScore([], BLANK) if h == unreadable else PairScore(SECOND[h]) for h in then]
        return [PairScore(REVERSE[h]) for h in first]

    monkeypatch.setattr(rescoring, "score_pairs", scored)
    request = Request(SearchSettings(beam=4, nbest=4), 100)
    judges = [Judge(Budget(), 1.0), Judge(RightToLeft(), 1.0)]  # type: ignore[arg-type]
    found = Rescored(Scripted(), judges).translate(["ein Hund"], request)  # type: ignore[arg-type]
    assert found[0].texts[-1] == unreadable and len(found[0].texts) == 4
