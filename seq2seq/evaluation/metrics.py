"""sacreBLEU evaluation: aligned files, corpus scores with signatures, paired bootstrap.

Scores always come from the sacrebleu library (BLEU, chrF or chrF++, TER), so every number carries
the signature that says how it was computed. Comparisons use sacrebleu's own paired bootstrap test.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sacrebleu.significance import PairedTest, Result

from seq2seq.data.textio import read_lines
from seq2seq.errors import DataError, EvaluateError
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.reader_metrics import ReaderMetricOptions

METRICS = ("bleu", "chrf", "ter")


@dataclass(frozen=True)
class TextFile:
    """The lines of a text file and the sha256 of its bytes, so a report names exactly what it scored."""

    path: Path
    lines: list[str]
    sha256: str

    @classmethod
    def read(cls, path: str | Path) -> TextFile:
        """The file's lines, read as every text input is (`read_lines`: in blocks, each line bounded)."""
        digest = hashlib.sha256()
        lines = read_lines(path, digest)
        return cls(Path(path), lines, digest.hexdigest())

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path.resolve()), "sha256": self.sha256, "lines": len(self.lines)}


def check_line_counts(first: TextFile, others: Sequence[TextFile]) -> None:
    """Every file must have as many lines as `first`; an empty reference is an error too."""
    if not first.lines:
        raise DataError(f"{first.path} is empty")
    for other in others:
        if len(other.lines) != len(first.lines):
            raise DataError(
                f"line counts differ: {other.path} has {len(other.lines)} lines, "
                f"{first.path} has {len(first.lines)}; the files must be aligned line by line"
            )


@dataclass
class MetricScore:
    name: str  # sacrebleu's name for it: BLEU, chrF2, chrF2++, TER
    score: float
    signature: str
    summary: str  # sacrebleu's verbose line, e.g. "BLEU = 23.41 55.2/29.1/17.3/10.6 (BP = 1.000 ...)"


def corpus_scores(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    options: MetricOptions | ReaderMetricOptions,
) -> dict[str, MetricScore]:
    """Corpus-level BLEU, chrF and TER (or a reader's scores) of one system, each with its signature."""
    scores = {}
    for key, metric in options.metrics().items():
        result = metric.corpus_score(list(hypotheses), [list(r) for r in references])
        scores[key] = MetricScore(result.name, result.score, str(metric.get_signature()), str(result))
    return scores


@dataclass
class BootstrapScore:
    score: float  # the system's corpus score
    mean: float  # mean over the bootstrap resamples
    ci: float  # half-width of the 95% confidence interval around `mean`
    p_value: float | None  # against the baseline; None for the baseline itself


@dataclass
class PairedBootstrap:
    """sacrebleu's paired bootstrap resampling of every system against the first (the baseline)."""

    samples: int
    signatures: dict[str, str]  # per metric key, with the bs: and seed: fields
    results: dict[str, list[BootstrapScore]]  # per metric key, one entry per system, baseline first


def paired_bootstrap(
    systems: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    options: MetricOptions | ReaderMetricOptions,
    samples: int = 1000,
) -> PairedBootstrap:
    """Paired bootstrap (sacrebleu's `PairedTest(test_type="bs")`), seeded by SACREBLEU_SEED (12345).

    sacrebleu counts resamples whose centred difference is strictly larger than the observed one, so a
    system identical to the baseline would get the floor 1/(samples+1); its p-value is set to 1.
    """
    metrics = options.metrics([list(r) for r in references])
    named: list[tuple[str, Sequence[str]]] = [(str(i), list(hyps)) for i, hyps in enumerate(systems)]
    signatures, table = PairedTest(named, metrics, None, test_type="bs", n_samples=samples)()
    names = list(table)[1:]  # sacrebleu's metric names, in the order of `metrics`
    results: dict[str, list[BootstrapScore]] = {}
    for key, name in zip(metrics, names, strict=True):
        results[key] = []
        for hyps, r in zip(systems, table[name], strict=True):
            # a metric's column holds a Result per system, with the bootstrap's mean and interval
            assert isinstance(r, Result) and r.mean is not None and r.ci is not None
            same = r.p_value is not None and list(hyps) == list(systems[0])
            results[key].append(
                BootstrapScore(r.score, float(r.mean), float(r.ci), 1.0 if same else r.p_value)
            )
    return PairedBootstrap(
        samples, {k: str(signatures[n]) for k, n in zip(metrics, names, strict=True)}, results
    )


def system_names(paths: Sequence[Path]) -> list[str]:
    """File names, or the paths as given when two files share a name."""
    names = [p.name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


def read_references(paths: Sequence[Path], source: TextFile | None = None) -> list[TextFile]:
    """The reference files, checked against each other and the source before anything is translated."""
    if not paths:
        raise EvaluateError("give the reference translations with --ref FILE")
    references = [TextFile.read(p) for p in paths]
    check_line_counts(references[0], [*references[1:], *([source] if source else [])])
    return references
