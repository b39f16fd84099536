"""Scores of a reader's predictions, as sacrebleu metrics: accuracy and macro-F1 (classify), token
accuracy and BIO span F1 (tag).

Each is a `sacrebleu.metrics.base.Metric` whose per-line statistics add up (counts of right,
predicted and true), so `s2s evaluate` scores, signs and bootstraps them with the same code as BLEU:
a paired bootstrap between two prediction files is sacrebleu's own test.

Span F1 follows CoNLL's conlleval: a span starts at `B-X`, or at an `I-X` that does not continue a
span of type X, and runs over the `I-X` after it; a predicted span counts when its type and both
ends match a true one. (seqeval computes the same; it is not a dependency because its last release
was in 2020 and it pulls in scikit-learn for this.)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sacrebleu.metrics.base import Metric, Score, Signature

from seq2seq.config import Task


class ReaderSignature(Signature):
    def __init__(self, args: dict) -> None:
        super().__init__(args)
        self._abbr.update({"task": "task", "classes": "classes"})
        self.info.update({"task": args["task"], "classes": args.get("classes")})


class _CountMetric(Metric):
    """A metric whose corpus score is a function of the per-line statistics' sum."""

    _SIGNATURE_TYPE = ReaderSignature
    name = ""

    def __init__(self, task: Task, references: Sequence[Sequence[str]] | None = None) -> None:
        super().__init__()
        self.task = str(task)  # an instance field: the signature reads them
        if references is not None:
            self._ref_cache = self._cache_references(references)

    def _preprocess_segment(self, sent: str) -> str:
        return sent.strip()

    def _extract_reference_info(self, refs: Sequence[str]) -> dict[str, Any]:
        return {"ref": refs[0]}

    def _aggregate_and_compute(self, stats: list[list[float]]) -> Score:
        return self._compute_score_from_stats(np.asarray(stats, dtype=np.float64).sum(0))

    def _score(self, value: float, detail: str = "") -> Score:
        score = Score(self.name, 100 * value)
        score._verbose = detail
        return score


class Accuracy(_CountMetric):
    """Lines whose label equals the reference's, in %."""

    name = "accuracy"

    def _compute_segment_statistics(self, hyp: str, ref_kwargs: dict) -> list[int]:
        return [int(hyp == ref_kwargs["ref"]), 1]

    def _compute_score_from_stats(self, stats: Sequence[float]) -> Score:
        right, total = stats
        return self._score(right / max(total, 1), f"({int(right)}/{int(total)})")


class MacroF1(_CountMetric):
    """The mean over `classes` (the references' labels) of each label's F1, in %."""

    name = "macro-F1"

    def __init__(
        self, task: Task, classes: Sequence[str], references: Sequence[Sequence[str]] | None = None
    ) -> None:
        self.classes = len(classes)
        self.index = {c: i for i, c in enumerate(classes)}
        super().__init__(task, references)

    def _compute_segment_statistics(self, hyp: str, ref_kwargs: dict) -> list[float]:
        """Per class: true positives, false positives, false negatives (3 x classes, flat)."""
        counts = np.zeros((3, self.classes))
        ref, predicted = self.index.get(ref_kwargs["ref"]), self.index.get(hyp)
        if hyp == ref_kwargs["ref"] and ref is not None:
            counts[0, ref] = 1
        else:
            if predicted is not None:
                counts[1, predicted] = 1
            if ref is not None:
                counts[2, ref] = 1
        return counts.ravel().tolist()

    def _compute_score_from_stats(self, stats: Sequence[float]) -> Score:
        tp, fp, fn = np.asarray(stats).reshape(3, self.classes)
        present = (tp + fn) > 0  # classes of the (resampled) references
        f1 = 2 * tp / np.maximum(2 * tp + fp + fn, 1)
        return self._score(float(f1[present].mean()) if present.any() else 0.0)


class TokenAccuracy(_CountMetric):
    """Tags equal to the reference's at the same word, in % of the reference's tags."""

    name = "token accuracy"

    def _compute_segment_statistics(self, hyp: str, ref_kwargs: dict) -> list[int]:
        ref = ref_kwargs["ref"].split()
        # a prediction may have more or fewer tags than its reference: the words past the shorter
        # one are simply not right
        return [sum(h == r for h, r in zip(hyp.split(), ref, strict=False)), len(ref)]

    def _compute_score_from_stats(self, stats: Sequence[float]) -> Score:
        right, total = stats
        return self._score(right / max(total, 1), f"({int(right)}/{int(total)})")


class SpanF1(_CountMetric):
    """F1 of labelled spans read from BIO tags (CoNLL's rule), in %."""

    name = "span F1"

    def _compute_segment_statistics(self, hyp: str, ref_kwargs: dict) -> list[int]:
        predicted, true = bio_spans(hyp.split()), bio_spans(ref_kwargs["ref"].split())
        return [len(predicted & true), len(predicted), len(true)]

    def _compute_score_from_stats(self, stats: Sequence[float]) -> Score:
        right, predicted, true = stats
        precision, recall = right / max(predicted, 1), right / max(true, 1)
        f1 = 2 * right / max(predicted + true, 1)
        return self._score(f1, f"(P = {100 * precision:.2f}, R = {100 * recall:.2f})")


def bio_spans(tags: Sequence[str]) -> set[tuple[int, int, str]]:
    """(start, end, type) of each span in BIO tags; end is exclusive. Tags without B-/I- are outside."""
    spans: set[tuple[int, int, str]] = set()
    span: tuple[int, str] | None = None  # the open span's start and type
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, label = tag.partition("-")
        inside = prefix == "I" and span is not None and label == span[1]
        if span is not None and not inside:
            spans.add((span[0], i, span[1]))
            span = None
        if prefix in ("B", "I") and label and not inside:
            span = (i, label)
    return spans


@dataclass(frozen=True)
class LabelMetricOptions:
    """What `s2s evaluate` scores a classifier's labels with (`MetricOptions` for translations)."""

    task: Task
    classes: tuple[str, ...] = ()  # the labels macro-F1 averages over (the references')
    noun = "labels"

    def metrics(self, references: Sequence[Sequence[str]] | None = None) -> dict[str, Metric]:
        return {
            "accuracy": Accuracy(self.task, references),
            "macro_f1": MacroF1(self.task, self.classes, references),
        }

    def confusion_pairs(self, references: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[str, str]]:
        """(reference, predicted) label of each line."""
        return [(r.strip(), h.strip()) for r, h in zip(references, hypotheses, strict=True)]


@dataclass(frozen=True)
class TagMetricOptions:
    """What `s2s evaluate` scores a tagger's tags with (`MetricOptions` for translations)."""

    task: Task
    classes: tuple[
        str, ...
    ] = ()  # the references' lines (recorded with the options; no tag score reads them)
    noun = "tags"

    def metrics(self, references: Sequence[Sequence[str]] | None = None) -> dict[str, Metric]:
        return {
            "token_accuracy": TokenAccuracy(self.task, references),
            "span_f1": SpanF1(self.task, references),
        }

    def confusion_pairs(self, references: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[str, str]]:
        """(reference, predicted) tag of each word; a missing tag (a prediction shorter than its
        reference) is predicted as "(none)"."""
        return [
            (r, h)
            for ref, hyp in zip(references, hypotheses, strict=True)
            for r, h in itertools.zip_longest(
                ref.split(), hyp.split()[: len(ref.split())], fillvalue="(none)"
            )
        ]


ReaderMetricOptions = LabelMetricOptions | TagMetricOptions
