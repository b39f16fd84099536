"""Alignment error rate (Och and Ney), with precision and recall, over a corpus of sentence pairs.

A reference has sure links S and possible links P (S is taken into P, as the definition wants S ⊆ P);
without a possible set, P = S. For predicted links A, counted over the whole corpus:

    precision = |A ∩ P| / |A|    recall = |A ∩ S| / |S|    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

An empty denominator makes its measure vacuous: precision 1 with nothing predicted, recall 1 with
nothing sure, AER 0 with neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from seq2seq.align import Pair
from seq2seq.errors import AlignmentError


@dataclass(frozen=True)
class AlignmentScores:
    """A corpus's alignment measures, each in [0, 1]; the link counts they come from beside them."""

    precision: float
    recall: float
    aer: float
    predicted: int  # |A|
    sure: int  # |S|
    predicted_sure: int  # |A ∩ S|
    predicted_possible: int  # |A ∩ P|


def alignment_scores(
    predicted: Sequence[Iterable[Pair]],
    sure: Sequence[Iterable[Pair]],
    possible: Sequence[Iterable[Pair]] | None = None,
) -> AlignmentScores:
    """Precision, recall and AER of `predicted` against the reference, one pair set per sentence pair."""
    for name, side in (("sure", sure), ("possible", possible)):
        if side is not None and len(side) != len(predicted):
            raise AlignmentError(
                f"there are {len(predicted)} predicted alignment lines and {len(side)} {name} reference "
                "lines; each sentence pair needs one line on both sides"
            )
    a_total = s_total = a_and_s = a_and_p = 0
    for number, a_pairs in enumerate(predicted):
        a, s = set(a_pairs), set(sure[number])
        p = s | set(possible[number]) if possible is not None else s
        a_total, s_total = a_total + len(a), s_total + len(s)
        a_and_s, a_and_p = a_and_s + len(a & s), a_and_p + len(a & p)
    return AlignmentScores(
        precision=a_and_p / a_total if a_total else 1.0,
        recall=a_and_s / s_total if s_total else 1.0,
        aer=1.0 - (a_and_s + a_and_p) / (a_total + s_total) if a_total + s_total else 0.0,
        predicted=a_total,
        sure=s_total,
        predicted_sure=a_and_s,
        predicted_possible=a_and_p,
    )
