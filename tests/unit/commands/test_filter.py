"""`s2s filter`'s work (`seq2seq.commands.filter`): the lines (pairs) kept are those no rule drops, in
their order, both sides of a pair together; the best scored share is the lowest dual cross-entropy or
the highest log-probability per token; no output may be an input, and nothing is written on refusal,
not even a folder; every score read is a finite number or a word `s2s score` writes for no score."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seq2seq.commands.filter import NO_SCORE, FilterJob, FilterRules, filter_text
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.files import OutputError
from tests.helpers import run_cli


def lines(path: Path, *items: str) -> Path:
    path.write_text("".join(f"{line}\n" for line in items), encoding="utf-8")
    return path


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_monolingual_text_is_kept_once_without_excluded_or_blank_lines_up_to_the_count(
    tmp_path: Path,
) -> None:
    first = lines(tmp_path / "a.en", "one", "two", "", "one", "three", "four", "five")
    second = lines(tmp_path / "b.en", "six", "two", "seven")
    known = lines(tmp_path / "train.en", "three")
    out = tmp_path / "out" / "mono.en"
    rules = FilterRules(exclude=(known,), unique=True, lines=5)
    counts = filter_text(FilterJob((first, second), out, (), None, rules))
    assert read(out) == ["one", "two", "four", "five", "six"]  # the two files one after the other
    assert counts == {"kept": 5, "blank": 1, "repeated": 1, "excluded": 1, "stopped at --lines": 1}


@pytest.mark.parametrize(
    ("scores", "kept"),
    [
        # s2s score --reverse: dual cross-entropy (lower is better), H_fwd, H_rev
        (["0.5\t1\t1", "blank\tblank\tblank", "0.1\t1\t1", "0.9\t1\t1", "0.3\t1\t1"], ["c", "e"]),
        # s2s score: total, log-probability per token (higher is better)
        (["-5\t-0.5", "-1\t-0.1", "short\tshort", "-9\t-0.9", "-3\t-0.3"], ["b", "e"]),
    ],
)
def test_the_best_scored_share_is_kept_with_both_sides_together(tmp_path: Path, scores, kept) -> None:
    src = lines(tmp_path / "s", "a", "b", "c", "d", "e")
    tgt = lines(tmp_path / "t", "A", "B", "C", "D", "E")
    path = lines(tmp_path / "scores.tsv", *scores)
    rules = FilterRules(scores=path, keep=0.5)  # half of the 4 scored pairs
    filter_text(FilterJob((src,), tmp_path / "o.s", (tgt,), tmp_path / "o.t", rules))
    assert read(tmp_path / "o.s") == kept and read(tmp_path / "o.t") == [k.upper() for k in kept]


def test_a_refused_filter_writes_nothing(tmp_path: Path) -> None:
    src = lines(tmp_path / "s", "a", "b")
    tgt = lines(tmp_path / "t", "A")
    with pytest.raises(OutputError):
        filter_text(FilterJob((src,), src, (), None, FilterRules()))  # the output is the input
    with pytest.raises(Seq2SeqError, match="different numbers of lines"):
        filter_text(FilterJob((src,), tmp_path / "o.s", (tgt,), tmp_path / "o.t", FilterRules()))
    with pytest.raises(Seq2SeqError, match="--tgt"):
        filter_text(FilterJob((src,), tmp_path / "o.s", (), None, FilterRules(scores=tgt, keep=0.5)))
    scores = lines(tmp_path / "scores", "-1\t-1")  # one line for two pairs
    with pytest.raises(Seq2SeqError, match="1 lines for 2 pairs"):
        filter_text(FilterJob((src,), tmp_path / "o.s", (src,), tmp_path / "o.t", FilterRules(scores=scores)))
    assert not (tmp_path / "o.s").exists() and not (tmp_path / "o.t").exists()


def test_scores_advise_a_parallel_text(tmp_path: Path) -> None:
    src, tgt = lines(tmp_path / "s", "a", "b"), lines(tmp_path / "t", "A", "B")
    scores = lines(tmp_path / "scores", "-1\t-1", "-2\t-2")
    asked = [
        "filter",
        "--src",
        str(src),
        "--scores",
        str(scores),
        "--keep",
        "0.5",
        "--out-src",
        str(tmp_path / "o.s"),
    ]
    refused = run_cli(*asked)
    assert refused.exit_code == 2 and "give --tgt and --out-tgt too" in refused.output
    followed = run_cli(*asked, "--tgt", str(tgt), "--out-tgt", str(tmp_path / "o.t"))
    assert followed.exit_code == 0, followed.output
    assert read(tmp_path / "o.s") == ["a"] and read(tmp_path / "o.t") == ["A"]


REFUSALS = {  # what is refused only once the lines are read
    "different numbers of lines": ("a\nb\n", "A\n", None),
    "scores of other pairs": ("a\nb\n", "A\nB\n", "-1\t-1\n"),
    "not UTF-8": ("a\nb\xe9\n", "A\nB\n", None),
    "a score that is not a number": ("a\nb\n", "A\nB\n", "-1\t-1\nnan\tnan\n"),
}


@pytest.mark.parametrize("refusal", REFUSALS)
@pytest.mark.parametrize("folders", ["new", "new/deeper", "existing/new"])
def test_a_refused_filter_leaves_no_folder_or_file_it_made(
    tmp_path: Path, refusal: str, folders: str
) -> None:
    src_text, tgt_text, scores_text = REFUSALS[refusal]
    (tmp_path / "s").write_bytes(src_text.encode("latin-1"))
    (tmp_path / "t").write_text(tgt_text, encoding="utf-8")
    (tmp_path / "existing").mkdir()
    asked = ["filter", "--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t")]
    asked += ["--out-src", str(tmp_path / folders / "o.s"), "--out-tgt", str(tmp_path / folders / "o.t")]
    if scores_text is not None:
        lines(tmp_path / "scores", *scores_text.splitlines())
        asked += ["--scores", str(tmp_path / "scores")]
    before = sorted(tmp_path.rglob("*"))
    result = run_cli(*asked)
    assert result.exit_code == 2 and result.output.startswith("error: "), result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before


NOT_SCORES = [
    "nan\tnan",
    "-nan\t-nan",
    "NaN\tNaN",
    "inf\tinf",
    "-inf\t-inf",
    "Infinity\tInfinity",
    "-1\tnan",
    "nan\t-1",
    "-1\tinf",
    "-1\t-0.5\t-0.1 nan",
    "0.5\tnan\t1",
    "0.5\t1\tinf",
    "word\tword",
    "blank\t-1",
    "short\tblank",
    "",
    "-1",
    "-1 -2\t-0.5",
]


@pytest.mark.parametrize("line", NOT_SCORES)
@pytest.mark.parametrize("dual", [False, True])
def test_every_score_read_is_a_finite_number_or_a_documented_word(
    tmp_path: Path, line: str, dual: bool
) -> None:
    """A scores line is numbers that are all finite, or `blank`/`short` in every field (what `s2s score`
    writes for a pair it gives no score); any other is an error naming the file and line."""
    src, tgt = lines(tmp_path / "s", "a", "b", "c"), lines(tmp_path / "t", "A", "B", "C")
    first = "0.5\t1\t1" if dual else "-1\t-0.5"
    scores = lines(tmp_path / "scores", first, line, first)
    job = FilterJob((src,), tmp_path / "o.s", (tgt,), tmp_path / "o.t", FilterRules(scores=scores, keep=0.5))
    with pytest.raises(DataError, match=f"^{re.escape(str(scores))}: line 2"):
        filter_text(job)
    assert not (tmp_path / "o.s").exists() and not (tmp_path / "o.t").exists()


def test_the_words_for_no_score_are_those_s2s_score_writes() -> None:
    from seq2seq.translate.lines import BLANK
    from seq2seq.translate.scoring import SHORT

    assert {BLANK, SHORT} == NO_SCORE
