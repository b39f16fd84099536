"""One score for one thing. A pair gets the same score from every verb that prints one: `s2s
translate --scores` of the model's own output is what `s2s score` gives that pair (under the
run's normalization, per token). Every score printed is a finite number, or the word that says why
the pair has none, in each of its fields: `blank` for a pair with a blank side (a blank source
line, a blank hypothesis or target), in translate, score, score --reverse and score --nbest alike;
`short` for a target shorter than decode.min_len, which the search never ends. And a pair's score
does not depend on what it is batched with: a line's hypotheses, whose source is encoded once, score
as each alone."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from seq2seq.data.textio import read_lines
from seq2seq.decoding.length_limits import output_limits
from seq2seq.translate.placement import Placement
from seq2seq.translate.scoring import score_pairs
from seq2seq.translate.translator import Translator
from tests.helpers import run_cli

COMMON = ("--device", "cpu", "--precision", "fp32")
WHY = {"blank", "short"}  # what a score field says of a pair without a score

# (source, target): whole, a blank source, a blank target, both blank, blank but not empty
PAIRS = [
    ("red cat runs", "RUNS CAT RED"),
    ("", "RED CAT"),
    ("the big dog", ""),
    ("", ""),
    (" \t", "DOG"),
    ("a bird sleeps", "SLEEPS BIRD A"),
]


def write_pairs(directory: Path, pairs: list[tuple[str, str]]) -> tuple[Path, Path]:
    src, tgt = directory / "pairs.src", directory / "pairs.tgt"
    src.write_text("".join(f"{s}\n" for s, _ in pairs), encoding="utf-8")
    tgt.write_text("".join(f"{t}\n" for _, t in pairs), encoding="utf-8")
    return src, tgt


def printed(verb: str, run: Path, src: Path, tgt: Path) -> list[str]:
    """The output lines of VERB over the pairs in SRC/TGT (translate reads SRC)."""
    args = {
        "translate --scores": ["translate", str(run), "-i", str(src), "--scores"],
        "translate --nbest": ["translate", str(run), "-i", str(src), "--nbest", "2"],
        "score": ["score", str(run), "--src", str(src), "--tgt", str(tgt)],
        "score --tokens": ["score", str(run), "--src", str(src), "--tgt", str(tgt), "--tokens"],
        "score --reverse": ["score", str(run), "--src", str(src), "--tgt", str(tgt), "--reverse", str(run)],
    }[verb]
    result = run_cli(*args, *COMMON)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def assert_score(field: str, blank: bool) -> None:
    """A pair with a blank side has the word `blank` for its score; any other a finite number."""
    if blank:
        assert field == "blank"
    else:
        assert math.isfinite(float(field)), field


@pytest.mark.parametrize(
    "verb", ["translate --scores", "translate --nbest", "score", "score --tokens", "score --reverse"]
)
def test_every_score_printed_is_a_finite_number_or_says_why(tiny_run, tmp_path, verb):
    """translate pairs each source line with its hypotheses (blank for a blank line), score with its
    target: a pair with a blank side is `blank` in each score field, in every verb."""
    src, tgt = write_pairs(tmp_path, PAIRS)
    lines = printed(verb, tiny_run.run, src, tgt)
    assert len(lines) == len(PAIRS)
    for (source, target), line in zip(PAIRS, lines, strict=True):
        fields = line.split("\t")
        if verb.startswith("translate"):
            assert len(fields) == 2 * (2 if "nbest" in verb else 1), line
            assert source.strip() or not any(fields[0::2]), line
            for hypothesis, score in zip(fields[0::2], fields[1::2], strict=True):
                assert_score(score, blank=not hypothesis.strip())
            continue
        if verb == "score --tokens":
            fields = [*fields[:-1], *fields[-1].split(" ")]
        assert len(fields) >= (3 if verb in ("score --tokens", "score --reverse") else 2), line
        for field in fields:
            assert_score(field, blank=not (source.strip() and target.strip()))


def test_score_reranks_blank_hypotheses_last_saying_why(tiny_run, tmp_path):
    src, _ = write_pairs(tmp_path, PAIRS[:2])
    nbest = tmp_path / "nbest"
    nbest.write_text("\t-1.0\tRUNS CAT\t-2.0\n\tblank\t\tblank\n", encoding="utf-8")
    result = run_cli("score", str(tiny_run.run), "--src", str(src), "--nbest", str(nbest), *COMMON)
    assert result.exit_code == 0, result.output
    scored, blank = (line.split("\t") for line in result.stdout.splitlines())
    assert scored[0::2] == ["RUNS CAT", ""] and math.isfinite(float(scored[1])) and scored[3] == "blank"
    assert blank == ["", "blank", "", "blank"]


ENGINES = ("s2s", "ctranslate2")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_translate_scores_are_what_score_gives_the_pair(trained_run, tmp_path, engine):
    """The run's normalization (power, alpha 1) divides a hypothesis' log-probability by its tokens and
    </s>: `s2s score`'s per-token column, which s2s's decoder computes on the run's weights. `translate
    --scores` reports the chosen engine's score: the same pair, the same weights at the same precision,
    the same score, from either engine. A blank line has no score in either. (Compared where the pair
    is the one the search scored: `comparable`.)"""
    run = trained_run("confident")
    sources = [*read_lines(run.data / "valid.src"), ""]
    src = tmp_path / "src"
    src.write_text("".join(f"{line}\n" for line in sources), encoding="utf-8")
    decoder = (str(run.run), "--engine", "s2s", *COMMON)
    if engine == "ctranslate2":  # the run's weights exported as they are (fp32), as `s2s score` reads them
        assert run_cli("export", str(run.run), str(tmp_path / "export")).exit_code == 0
        decoder = (str(tmp_path / "export"), "--device", "cpu")
    translated = run_cli("translate", *decoder, "-i", str(src), "--scores")
    assert translated.exit_code == 0, translated.output
    hypotheses, scores = zip(*(line.split("\t") for line in translated.stdout.splitlines()), strict=True)
    tgt = tmp_path / "tgt"
    tgt.write_text("".join(f"{h}\n" for h in hypotheses), encoding="utf-8")
    scored = run_cli("score", str(run.run), "--src", str(src), "--tgt", str(tgt), *COMMON)
    assert scored.exit_code == 0, scored.output
    per_token = [line.split("\t")[1] for line in scored.stdout.splitlines()]
    assert scores[-1] == per_token[-1] == "blank"
    same = [i for i, pair in enumerate(comparable(run.run, sources[:-1])) if pair]
    assert len(same) >= 10
    for i in same:
        assert float(scores[i]) == pytest.approx(float(per_token[i]), abs=2e-4), sources[i]


def comparable(run: Path, sources: list[str]) -> list[bool]:
    """Whether the search's best hypothesis of each source is the pair `s2s score` reads back: ended by
    the model's </s> (not cut at the length limit), and its pieces those the tokenizer makes of its
    text (a trailing piece that detokenizes to nothing is lost in the text)."""
    translator = Translator.load(run, ("best",), Placement("cpu", "fp32"))
    settings, tokenizer = translator.options().search, translator.tokenizers.tgt
    source_ids = translator.tokenizers.src.encode(sources)
    lengths = torch.tensor([len(ids) + 1 for ids in source_ids])
    limits = output_limits(lengths, settings, translator.model.max_positions).tolist()
    best = [nbest[0].tokens for nbest in translator.decode_ids(source_ids, settings, 1000)]
    again = tokenizer.encode(tokenizer.decode(best))
    return [
        len(ids) < limit - 1 and ids == read for ids, read, limit in zip(best, again, limits, strict=True)
    ]


def test_a_target_shorter_than_min_len_is_short(tiny_run):
    """The search never ends a translation before decode.min_len tokens: such a target has
    probability 0 under the distribution it chooses from, and no finite score."""
    translator = Translator.load(tiny_run.run, ("best",), Placement("cpu", "fp32"))
    decode = dataclasses.replace(translator.config.decode, min_len=6)
    translator.config = dataclasses.replace(translator.config, decode=decode)
    src, tgt = ["red cat", "red cat", "red cat"], ["RED", "CAT RED SLEEPS RUNS", ""]
    assert [len(ids) < 6 for ids in translator.tokenizers.tgt.encode(tgt)] == [True, False, True]
    short, whole, blank = score_pairs(translator, src, tgt, 1000)
    assert short.missing == "short" and blank.missing == "blank" and not whole.missing
    assert math.isfinite(whole.total)


@pytest.mark.parametrize("kind", ["right_to_left", "tiny", "decoder_only"])
def test_a_lines_hypotheses_scored_together_score_as_each_alone(trained_run, kind):
    """`score_pairs` encodes each distinct source of a batch once (a line's hypotheses, as reranking
    scores them): every pair's scores are those it gets scored on its own (fp32, within 1e-5)."""
    run = trained_run(kind)
    translator = Translator.load(run.run, placement=Placement("cpu", "fp32"))
    lines = (run.data / "valid.src").read_text(encoding="utf-8").splitlines()[:4]
    hypotheses = ["red cat", "RED CAT RUNS", "the the the", "BIRD"]
    sources = [line for line in lines for _ in hypotheses]
    targets = hypotheses * len(lines)
    together = score_pairs(translator, sources, targets, 10_000)
    alone = [score_pairs(translator, [s], [t], 10_000)[0] for s, t in zip(sources, targets, strict=True)]
    for one, other in zip(together, alone, strict=True):
        assert one.missing == other.missing and one.tokens == pytest.approx(other.tokens, abs=1e-5)
