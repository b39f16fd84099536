"""sacreBLEU evaluation: aligned files, corpus scores with signatures, paired bootstrap, the JSON record.

Scores always come from the sacrebleu library (BLEU, chrF or chrF++, TER), so every number carries
the signature that says how it was computed. Comparisons use sacrebleu's own paired bootstrap test.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sacrebleu
import torch
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.base import Metric
from sacrebleu.significance import PairedTest

from seq2seq.data.textio import split_lines
from seq2seq.errors import DataError, EvaluateError
from seq2seq.evaluation.reader_metrics import ReaderMetricOptions
from seq2seq.files import file_sha256, write_text

if TYPE_CHECKING:
    from seq2seq.decoding.search import SearchSettings
    from seq2seq.translate.translator import Translator

METRICS = ("bleu", "chrf", "ter")


@dataclass(frozen=True)
class MetricOptions:
    """How hypotheses are compared with references; every choice shows up in the signatures.

    The defaults are sacrebleu's, so a score here matches the `sacrebleu` command's with its defaults.
    """

    tokenize: str = "13a"  # BLEU's tokenizer (chrF and TER have their own)
    lowercase: bool = False  # case-insensitive BLEU and chrF (TER always is, as in sacrebleu)
    chrf_plus: bool = False  # chrF++ (adds word bigrams) instead of chrF

    def bleu(self, references: Sequence[Sequence[str]] | None = None, sentence: bool = False) -> BLEU:
        """Corpus BLEU, or sentence BLEU (effective n-gram order) when `sentence` is True."""
        if self.tokenize not in BLEU.TOKENIZERS:
            raise EvaluateError(
                f"unknown --tokenize {self.tokenize!r}; choose one of {', '.join(BLEU.TOKENIZERS)}"
            )
        try:
            return BLEU(
                tokenize=self.tokenize,
                lowercase=self.lowercase,
                effective_order=sentence,
                references=references,
            )
        except ImportError as e:
            raise EvaluateError(f"--tokenize {self.tokenize} needs an extra package: {e}") from None

    def chrf(self, references: Sequence[Sequence[str]] | None = None) -> CHRF:
        return CHRF(word_order=2 if self.chrf_plus else 0, lowercase=self.lowercase, references=references)

    def metrics(self, references: Sequence[Sequence[str]] | None = None) -> dict[str, Metric]:
        """Fresh sacrebleu metrics, keyed by METRICS; `references` (one stream per reference) are cached."""
        return {
            "bleu": self.bleu(references),
            "chrf": self.chrf(references),
            "ter": TER(references=references),  # case-insensitive, as sacrebleu's TER is by default
        }


@dataclass(frozen=True)
class TextFile:
    """The lines of a text file and the sha256 of its bytes, so a report names exactly what it scored."""

    path: Path
    lines: list[str]
    sha256: str

    @classmethod
    def read(cls, path: str | Path) -> TextFile:
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise DataError(f"cannot read {path}: {e.strerror}") from None
        return cls(path, split_lines(raw, str(path)), hashlib.sha256(raw).hexdigest())

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path.resolve()), "sha256": self.sha256, "lines": len(self.lines)}


def check_aligned(first: TextFile, others: Sequence[TextFile]) -> None:
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
    named = [(str(i), list(hyps)) for i, hyps in enumerate(systems)]
    signatures, table = PairedTest(named, metrics, None, test_type="bs", n_samples=samples)()
    names = list(table)[1:]  # sacrebleu's metric names, in the order of `metrics`
    results: dict[str, list[BootstrapScore]] = {}
    for key, name in zip(metrics, names):
        results[key] = []
        for hyps, r in zip(systems, table[name]):
            same = r.p_value is not None and list(hyps) == list(systems[0])
            results[key].append(
                BootstrapScore(r.score, float(r.mean), float(r.ci), 1.0 if same else r.p_value)
            )
    return PairedBootstrap(samples, {k: str(signatures[n]) for k, n in zip(metrics, names)}, results)


@dataclass
class DecodeRun:
    """How the hypotheses were made: search settings and translation speed."""

    settings: dict[str, Any]  # the search settings, plus max_tokens and device
    sentences: int
    source_tokens: int  # subword tokens, without <eos>
    target_tokens: int  # subword tokens of the hypotheses, without <eos>
    seconds: float

    def describe(self) -> dict[str, Any]:
        per_s = max(self.seconds, 1e-9)
        return {
            **self.settings,
            "sentences": self.sentences,
            "source_tokens": self.source_tokens,
            "target_tokens": self.target_tokens,
            "seconds": round(self.seconds, 3),
            "sentences_per_second": round(self.sentences / per_s, 2),
            "tokens_per_second": round(self.target_tokens / per_s, 1),
        }


def translate_timed(
    translator: Translator,
    source: TextFile,
    out: Path,
    settings: SearchSettings,
    max_tokens: int | None,
) -> DecodeRun:
    """Translate every line of `source` into `out`, timing the translation alone (for the record)."""
    budget = max_tokens or translator.config.decode.max_tokens
    start = time.perf_counter()
    texts = [t.texts[0] for t in translator.translate(source.lines, settings, budget)]
    seconds = time.perf_counter() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, "".join(f"{t}\n" for t in texts))
    return DecodeRun(
        {
            **dataclasses.asdict(settings),
            "max_tokens": budget,
            "device": str(translator.device),
            "precision": str(translator.dtype or torch.float32).removeprefix("torch."),
            "quantize": translator.quantize,
        },
        sentences=len(texts),
        source_tokens=sum(map(len, translator.tokenizers.src.encode(source.lines))),
        target_tokens=sum(map(len, translator.tokenizers.tgt.encode(texts))),
        seconds=seconds,
    )


def system_names(paths: Sequence[Path]) -> list[str]:
    """File names, or the paths as given when two files share a name."""
    names = [p.name for p in paths]
    return names if len(set(names)) == len(names) else [str(p) for p in paths]


@dataclass
class System:
    name: str
    file: TextFile
    scores: dict[str, MetricScore]


@dataclass
class Evaluation:
    """Everything one `s2s evaluate` measured; the table, the JSON and the report are views of it."""

    options: MetricOptions | ReaderMetricOptions
    references: list[TextFile]
    systems: list[System]
    source: TextFile | None = None
    bootstrap: PairedBootstrap | None = None
    run_dir: Path | None = None
    checkpoints: list[Path] = dataclasses.field(default_factory=list)  # several: an ensemble
    decode: DecodeRun | None = None


def read_references(paths: Sequence[Path], source: TextFile | None = None) -> list[TextFile]:
    """The reference files, checked against each other and the source before anything is translated."""
    if not paths:
        raise EvaluateError("give the reference translations with --ref FILE")
    references = [TextFile.read(p) for p in paths]
    check_aligned(references[0], [*references[1:], *([source] if source else [])])
    return references


def evaluate_files(
    hyps: Sequence[Path],
    references: list[TextFile],
    options: MetricOptions | ReaderMetricOptions,
    source: TextFile | None = None,
    samples: int = 1000,
) -> Evaluation:
    """Read, check and score hypothesis files; with two or more, bootstrap them against the first."""
    files = [TextFile.read(p) for p in hyps]
    check_aligned(references[0], files)
    ref_lines = [r.lines for r in references]
    systems = [
        System(name, f, corpus_scores(f.lines, ref_lines, options))
        for name, f in zip(system_names(hyps), files)
    ]
    bootstrap = (
        paired_bootstrap([f.lines for f in files], ref_lines, options, samples) if len(files) > 1 else None
    )
    return Evaluation(options, references, systems, source, bootstrap)


def evaluation_record(evaluation: Evaluation) -> dict[str, Any]:
    """The JSON-ready record: every score and signature, file checksums, model and decode settings."""
    e = evaluation
    record: dict[str, Any] = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "sacrebleu_version": sacrebleu.__version__,
        "options": dataclasses.asdict(e.options),
        "references": [r.describe() for r in e.references],
        "source": e.source.describe() if e.source else None,
        "systems": [
            {
                "name": s.name,
                **s.file.describe(),
                "scores": {k: dataclasses.asdict(v) for k, v in s.scores.items()},
            }
            for s in e.systems
        ],
        "model": None,
        "decode": e.decode.describe() if e.decode else None,
        "bootstrap": None,
    }
    if e.run_dir is not None:
        checkpoints = [{"path": str(p.resolve()), "sha256": file_sha256(p)} for p in e.checkpoints]
        record["model"] = {
            "run_dir": str(e.run_dir.resolve()),
            "checkpoint": checkpoints[0] if checkpoints else None,
            "checkpoints": checkpoints,
        }
    if e.bootstrap is not None:
        record["bootstrap"] = {
            "test": "paired bootstrap resampling (sacrebleu)",
            "baseline": e.systems[0].name,
            "samples": e.bootstrap.samples,
            "signatures": e.bootstrap.signatures,
            "results": {k: [dataclasses.asdict(r) for r in v] for k, v in e.bootstrap.results.items()},
        }
    return record


def write_json(evaluation: Evaluation, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(evaluation_record(evaluation), indent=2) + "\n")


def format_table(evaluation: Evaluation) -> str:
    """The summary for people: one row per system, then the signatures that say how it was scored."""
    e = evaluation
    keys = list(e.systems[0].scores)  # METRICS, or a reader's (`seq2seq.evaluation.reader_metrics`)
    header = ["system", *(e.systems[0].scores[k].name for k in keys)]
    rows = [header]
    for i, system in enumerate(e.systems):
        label = f"baseline: {system.name}" if e.bootstrap and i == 0 else system.name
        rows.append([label, *(score_cell(e, i, k) for k in keys)])
    widths = [max(len(row[j]) for row in rows) for j in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if j == 0 or e.bootstrap else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]
    signatures = (
        e.bootstrap.signatures if e.bootstrap else {k: e.systems[0].scores[k].signature for k in keys}
    )
    lines += ["", *(f"{e.systems[0].scores[k].name}: {signatures[k]}" for k in keys)]
    if e.bootstrap:
        lines.append(
            f"score (bootstrap mean ± 95% CI); p: paired bootstrap against the baseline, "
            f"* p < 0.05 ({e.bootstrap.samples} resamples). TER: lower is better."
        )
    return "\n".join(lines)


def score_cell(evaluation: Evaluation, system: int, key: str) -> str:
    """`23.41`, or with a bootstrap `23.41 (23.38 ± 1.02)`, plus ` p=0.0420*` for a compared system."""
    if evaluation.bootstrap is None:
        return f"{evaluation.systems[system].scores[key].score:.2f}"
    r = evaluation.bootstrap.results[key][system]
    p = "" if r.p_value is None else f" p={r.p_value:.4f}{'*' if r.p_value < 0.05 else ' '}"
    return f"{r.score:.2f} ({r.mean:.2f} ± {r.ci:.2f}){p}"
