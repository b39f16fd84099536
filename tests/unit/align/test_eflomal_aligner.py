"""The eflomal run, with a stand-in for eflomal (a unit test runs no process): empty lines never reach
it, its links come back symmetrized line for line, and whatever goes wrong is a user error saying what."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from seq2seq.align.eflomal_aligner import align_words
from seq2seq.errors import AlignmentError

Writer = Callable[[list[str], list[str]], tuple[list[str], list[str]]]


def diagonal(src: list[str], tgt: list[str]) -> tuple[list[str], list[str]]:
    """Word n to word n, as far as the shorter side goes, in both directions."""
    shorter = [min(len(s.split()), len(t.split())) for s, t in zip(src, tgt, strict=True)]
    lines = [" ".join(f"{n}-{n}" for n in range(words)) for words in shorter]
    return lines, lines


def stand_in(monkeypatch: pytest.MonkeyPatch, write: Writer = diagonal) -> list[list[str]]:
    """Put a stand-in eflomal in place; it writes `write`'s links and records the source it was given."""
    seen: list[list[str]] = []

    class Aligner:
        def __init__(self, **options: object) -> None:
            pass

        def align(self, src, trg, links_filename_fwd, links_filename_rev, quiet) -> None:
            src, trg = list(src), list(trg)
            seen.append(src)
            for name, lines in zip((links_filename_fwd, links_filename_rev), write(src, trg), strict=True):
                if lines is not None:
                    Path(name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    monkeypatch.setitem(sys.modules, "eflomal", types.SimpleNamespace(Aligner=Aligner))
    return seen


def test_empty_lines_get_no_links_and_never_reach_eflomal(monkeypatch):
    seen = stand_in(monkeypatch)
    src = ["a b", "", "c d e", "f", "  "]
    tgt = ["A B", "X", "C D", "", "Y Z"]
    assert align_words(src, tgt) == [[(0, 0), (1, 1)], [], [(0, 0), (1, 1)], [], []]
    assert seen == [["a b", "c d e"]]


def test_no_line_with_two_sides_runs_nothing(monkeypatch):
    seen = stand_in(monkeypatch)
    assert align_words(["", "a"], ["b", ""]) == [[], []] and align_words([], []) == []
    assert seen == []


def test_the_two_directions_are_symmetrized(monkeypatch):
    stand_in(monkeypatch, lambda src, tgt: (["0-0 1-1 2-2 3-0 4-4"], ["0-0 1-1 2-1 4-3"]))
    assert align_words(["a b c d e"], ["A B C D E"]) == [[(0, 0), (1, 1), (2, 1), (2, 2), (3, 0), (4, 4)]]


def test_sides_of_different_lengths_are_refused(monkeypatch):
    stand_in(monkeypatch)
    with pytest.raises(AlignmentError, match="the source has 2 lines and the target 1"):
        align_words(["a", "b"], ["A"])


def test_without_eflomal_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "eflomal", None)  # what an uninstalled package imports as
    with pytest.raises(AlignmentError, match=r'pip install --no-cache-dir "s2s\[align\]"'):
        align_words(["a"], ["A"])


def test_an_exception_inside_eflomal_is_an_error_naming_it(monkeypatch):
    def crash(src: list[str], tgt: list[str]) -> tuple[list[str], list[str]]:
        raise ValueError("Mismatched file sizes")

    stand_in(monkeypatch, crash)
    with pytest.raises(AlignmentError, match="eflomal failed while aligning 1 sentence pairs: Mismatched"):
        align_words(["a"], ["A"])


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda s, t: (None, ["0-0"]), "eflomal wrote no forward alignments"),  # a crash before writing
        (lambda s, t: (["0-0", "0-0"], ["0-0"]), "wrote 1 reverse alignment lines for 2 sentence pairs"),
        (lambda s, t: (["0-0", "0-0"], ["0-0", "0-5"]), "reverse alignments are broken: line 2: .*'0-5'"),
    ],
)
def test_links_eflomal_left_missing_short_or_wrong_are_an_error(monkeypatch, write, message):
    stand_in(monkeypatch, write)
    with pytest.raises(AlignmentError, match=message):
        align_words(["a b", "c d"], ["A B", "C D"])
