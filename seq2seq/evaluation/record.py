"""What one `s2s evaluate` measured, and its views: the JSON record and the table for people.

`seq2seq.evaluation.metrics` computes the scores; the HTML report (`report`) is a third view.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sacrebleu

from seq2seq.evaluation.metrics import (
    MetricOptions,
    MetricScore,
    PairedBootstrap,
    TextFile,
    check_line_counts,
    corpus_scores,
    paired_bootstrap,
    system_names,
)
from seq2seq.evaluation.reader_metrics import ReaderMetricOptions
from seq2seq.files import file_sha256, write_text


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


@dataclass
class System:
    name: str
    file: TextFile
    scores: dict[str, MetricScore]


@dataclass(frozen=True)
class MadeBy:
    """Where the hypotheses came from, when a run made them (or gave its learning curves)."""

    run_dir: Path | None = None
    checkpoints: tuple[Path, ...] = ()  # the weights that translated; several: an ensemble
    decode: DecodeRun | None = None  # how they were translated; None: given with --hyp


@dataclass(frozen=True)
class AugmentedSet:
    """The test set modified one way (`s2s evaluate --augment`), translated and scored like the set as
    given (`seq2seq.evaluation.modified_sets`)."""

    modifier: str  # upper, title, typos or nopunct
    seed: int
    references_changed: bool  # upper and title change the references too; typos and nopunct do not
    source_sha256: str  # of the modified source lines
    hypotheses: TextFile
    scores: dict[str, MetricScore]
    decode: DecodeRun

    def describe(self) -> dict[str, Any]:
        return {
            "modifier": self.modifier,
            "seed": self.seed,
            "changes": "source and references" if self.references_changed else "source",
            "source_sha256": self.source_sha256,
            "hypotheses": self.hypotheses.describe(),
            "scores": {k: dataclasses.asdict(v) for k, v in self.scores.items()},
            "decode": self.decode.describe(),
        }


@dataclass
class Evaluation:
    """Everything one `s2s evaluate` measured; the table, the JSON and the report are views of it.

    `options` are what the hypotheses were scored with, chosen once for what they are
    (`evaluation.evaluation_plan.scoring_options`): a translation's or a reader's.
    """

    options: MetricOptions | ReaderMetricOptions
    references: list[TextFile]
    systems: list[System]
    source: TextFile | None = None
    bootstrap: PairedBootstrap | None = None
    made_by: MadeBy = MadeBy()
    augmented: list[AugmentedSet] = dataclasses.field(default_factory=list)  # --augment's sets


def evaluate_files(
    hyps: Sequence[Path],
    references: list[TextFile],
    options: MetricOptions | ReaderMetricOptions,
    source: TextFile | None = None,
    samples: int = 1000,
    made_by: MadeBy = MadeBy(),
) -> Evaluation:
    """Read, check and score hypothesis files; with two or more, bootstrap them against the first."""
    files = [TextFile.read(p) for p in hyps]
    check_line_counts(references[0], files)
    ref_lines = [r.lines for r in references]
    systems = [
        System(name, f, corpus_scores(f.lines, ref_lines, options))
        for name, f in zip(system_names(hyps), files, strict=True)
    ]
    bootstrap = (
        paired_bootstrap([f.lines for f in files], ref_lines, options, samples) if len(files) > 1 else None
    )
    return Evaluation(options, references, systems, source, bootstrap, made_by)


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
        "decode": e.made_by.decode.describe() if e.made_by.decode else None,
        "bootstrap": None,
        "augmented": [a.describe() for a in e.augmented],
    }
    if e.made_by.run_dir is not None:
        checkpoints = [{"path": str(p.resolve()), "sha256": file_sha256(p)} for p in e.made_by.checkpoints]
        record["model"] = {
            "run_dir": str(e.made_by.run_dir.resolve()),
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
    clean = e.systems[0].scores
    for augmented in e.augmented:  # each beside the set as given: its score and the change
        changes = (f"{s.score:.2f} ({s.score - clean[k].score:+.2f})" for k, s in augmented.scores.items())
        rows.append([f"+{augmented.modifier}", *changes])
    widths = [max(len(row[j]) for row in rows) for j in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if j == 0 or e.bootstrap else c.rjust(w)
            for j, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    signatures = (
        e.bootstrap.signatures if e.bootstrap else {k: e.systems[0].scores[k].signature for k in keys}
    )
    lines += ["", *(f"{e.systems[0].scores[k].name}: {signatures[k]}" for k in keys)]
    if e.augmented:
        lines.append(augmented_note(e.augmented))
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


def augmented_note(sets: Sequence[AugmentedSet]) -> str:
    """What the +MODIFIER rows are: the set modified by s2s, each scored with the signatures above."""
    changed = {
        "source and references": [a.modifier for a in sets if a.references_changed],
        "source only": [a.modifier for a in sets if not a.references_changed],
    }
    what = "; ".join(f"{', '.join(names)}: {change}" for change, names in changed.items() if names)
    return (
        f"+MODIFIER: the set modified with --seed {sets[0].seed} ({what}), same signatures; "
        "(±): change from the set as given."
    )
