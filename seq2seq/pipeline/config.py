"""The pipeline file (`s2s pipeline PIPELINE.yaml`): a language pair, its corpora, and the steps from
them to a deployed student, as frozen dataclasses read by the run configs' strict loader.

Unknown keys (with the closest valid one), mistyped values and every rule below are reported
together, in one `ConfigError`. The parallel corpora are the run configs' own `data.corpora`
(`CorpusConfig`); what each training step adds to its base run config is `seq2seq.pipeline.plan`'s.
A step section that is left out is a step the pipeline does not have; the teacher, the choice on val
and the evaluation are always there. A section written empty (`teacher:` with nothing after it, YAML
null) is read as `{}`: its defaults (a step section: that step), and its required keys named as missing.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seq2seq.config.bounds import MAX_BEAM, MAX_LENGTH_PENALTY, MAX_SAMPLING_TEMPERATURE, MAX_SEED, MAX_VOCAB
from seq2seq.config.corpus import LANGUAGE
from seq2seq.config.loading import dataclass_from_dict, read_yaml_mapping
from seq2seq.config.rules import Rule, broken
from seq2seq.errors import ConfigError
from seq2seq.evaluation.selection import MAX_WITHIN
from seq2seq.pipeline.data import PipelineData, data_rules
from seq2seq.translate.options import MAX_RERANK_WEIGHT

MAX_ENSEMBLE = 16  # teachers decoding together: each one's weights are in memory, each runs every step
CHECKPOINTS = ("best", "last", "averaged")  # what the choice on val may try (averaged: `s2s average`)
EXPORT_TYPES = ("int8", "int8_float32", "int16", "float16", "bfloat16")  # `s2s export --quantize`
SOURCES = ("train", "mono")  # what a teacher translates for its student


@dataclass(frozen=True)
class Training:
    """What every training step starts from: a run config, overrides, and how it is launched."""

    base: str = ""  # a run config (model, train, decode, tokenizer); its data and run_dir are replaced
    set: tuple[str, ...] = ()  # `section.key=value` for every training, as `s2s train --set`
    # runs `-m seq2seq train ...` instead of python: [torchrun, --nproc_per_node=2]
    launcher: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackwardStep:
    """A model of the other direction (target to source), for back-translation and filtering."""

    set: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackTranslationStep:
    """The backward model translates target-side monolingual text into synthetic sources."""

    lines: int = 0  # at most this many (0: all): each once, none a training target
    beam: int = 5
    sampling: bool = False  # one drawn translation per line (`--sampling`) instead of beam search
    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    seed: int = 1
    tag: str = "<bt>"  # put first in each synthetic source ("" : none), declared as a control token
    weight: float = 1.0  # the synthetic corpus's data.corpora weight


@dataclass(frozen=True)
class RightToLeftStep:
    """The teacher's twin written right to left (model.right_to_left), on its data and tokenizer: where
    the pipeline has one, it is what reranks the teacher's beam at `select.rerank_weights`."""

    set: tuple[str, ...] = ()


@dataclass(frozen=True)
class TeacherStep:
    ensemble: int = 1  # teachers, each with its own seed and the first one's tokenizer
    set: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelectStep:
    """The checkpoint and length penalty each model decodes with, chosen on the validation set; for
    the teacher, also whether a second model reranks its beam and at which weight."""

    checkpoints: tuple[str, ...] = ("best", "averaged")
    length_penalties: tuple[float, ...] = (0.6, 1.0, 1.4)
    beam: int = 5
    # each also a candidate with the teacher's beam reranked (`--rerank`) by steps.right_to_left's model
    # where there is one, else by steps.backward's
    rerank_weights: tuple[float, ...] = ()
    # with both of those steps: the backward model's weights beside the right-to-left model's (each pair)
    backward_weights: tuple[float, ...] = ()


@dataclass(frozen=True)
class DistillationStep:
    """The teacher translates sources for its student (sequence-level distillation)."""

    sources: tuple[str, ...] = ("train",)  # train (the corpora's sources), mono (data.mono_src), or both
    lines: int = 0  # at most this many (0: all), each once


@dataclass(frozen=True)
class FilterStep:
    """The distilled pairs kept for the student: the best scored share (`s2s score`)."""

    score: Literal["backward", "dual"] = (
        "dual"  # the backward model's log-probability, or the dual cross-entropy
    )
    keep: float = 0.9


@dataclass(frozen=True)
class StudentStep:
    shrink: bool = False  # start from the teacher's weights, with the layers the student's set keeps
    set: tuple[str, ...] = ()
    beams: tuple[int, ...] = ()  # the beams val tries for it (none: steps.select.beam)
    within: float = 0.0  # val keeps the cheapest candidate this close to the best (`s2s select --within`)


@dataclass(frozen=True)
class ExportStep:
    quantize: str = "int8"
    shortlist: int = 0  # target pieces per source piece (0: no shortlist)


@dataclass(frozen=True)
class Steps:
    backward: BackwardStep | None = None
    back_translation: BackTranslationStep | None = None
    teacher: TeacherStep = field(default_factory=TeacherStep)
    right_to_left: RightToLeftStep | None = None
    select: SelectStep = field(default_factory=SelectStep)
    distillation: DistillationStep | None = None
    filter: FilterStep | None = None
    student: StudentStep | None = None
    export: ExportStep | None = None


@dataclass(frozen=True)
class PipelineConfig:
    """One pipeline: where its results go, its language pair, its text and its steps."""

    workspace: str = ""  # every step's results, logs and records; the final table
    src_lang: str = ""
    tgt_lang: str = ""
    engine: Literal["s2s", "auto"] = "s2s"  # what decodes with a run (`--engine`); an export: CTranslate2
    training: Training = field(default_factory=Training)
    data: PipelineData = field(default_factory=PipelineData)
    steps: Steps = field(default_factory=Steps)

    def problems(self) -> list[str]:
        """Every broken rule, section by section."""
        return broken(
            [
                (not self.workspace, "workspace: required (the directory every step writes into)"),
                *(
                    (not LANGUAGE.fullmatch(code), f"{key}: {code!r} is not a language code such as de or en")
                    for key, code in (("src_lang", self.src_lang), ("tgt_lang", self.tgt_lang))
                ),
                (self.src_lang == self.tgt_lang != "", "tgt_lang: the same as src_lang"),
                (
                    not self.training.base,
                    "training.base: required (the run config every training starts from)",
                ),
                (
                    bool(self.training.base) and not Path(self.training.base).is_file(),
                    f"training.base: file not found: {self.training.base}",
                ),
                *data_rules(self.data),
                *_step_rules(self.steps, self.data),
            ]
        )


def _step_rules(steps: Steps, data: PipelineData) -> list[Rule]:
    """Each step's numbers, and the steps and text it needs."""
    tsv = [c.name for c in data.corpora if c.tsv]
    rules: list[Rule] = [
        (
            steps.backward is not None and bool(tsv),
            f"steps.backward: reads the corpora the other way round: give {', '.join(tsv)} as src and tgt",
        ),
        (
            not 1 <= steps.teacher.ensemble <= MAX_ENSEMBLE,
            f"steps.teacher.ensemble: must be in [1, {MAX_ENSEMBLE}]",
        ),
        *_select_rules(steps.select),
        (
            bool(steps.select.rerank_weights) and steps.backward is None and steps.right_to_left is None,
            "steps.select.rerank_weights: a second model reranks the teacher's beam: give "
            "steps.right_to_left or steps.backward",
        ),
        (
            steps.right_to_left is not None and not steps.select.rerank_weights,
            "steps.right_to_left: it reranks the teacher's beam: give steps.select.rerank_weights",
        ),
        (
            bool(steps.select.backward_weights) and (steps.backward is None or steps.right_to_left is None),
            "steps.select.backward_weights: the backward model reranks beside the right-to-left model: "
            "give steps.backward and steps.right_to_left",
        ),
    ]
    if (bt := steps.back_translation) is not None:
        rules += [
            (
                steps.backward is None,
                "steps.back_translation: needs steps.backward (the model that translates)",
            ),
            (not data.mono_tgt, "steps.back_translation: needs data.mono_tgt (the text it translates)"),
            (bt.lines < 0, "steps.back_translation.lines: must be >= 0 (0: all)"),
            (not 1 <= bt.beam <= MAX_BEAM, f"steps.back_translation.beam: must be in [1, {MAX_BEAM}]"),
            (not 0 <= bt.top_k <= MAX_VOCAB, f"steps.back_translation.top_k: must be in [0, {MAX_VOCAB}]"),
            (not 0 < bt.top_p <= 1, "steps.back_translation.top_p: must be in (0, 1]"),
            (
                not 0 < bt.temperature <= MAX_SAMPLING_TEMPERATURE,
                f"steps.back_translation.temperature: must be in (0, {MAX_SAMPLING_TEMPERATURE:g}]",
            ),
            (not 0 <= bt.seed <= MAX_SEED, f"steps.back_translation.seed: must be in [0, {MAX_SEED}]"),
            (bool(bt.tag) and not _is_control_token(bt.tag), "steps.back_translation.tag: a token like <bt>"),
            (not 0 < bt.weight <= 10_000, "steps.back_translation.weight: must be in (0, 10000]"),
        ]
    return rules + _student_rules(steps, data)


def _select_rules(select: SelectStep) -> list[Rule]:
    wrong = [c for c in select.checkpoints if c not in CHECKPOINTS]
    return [
        (not select.checkpoints, f"steps.select.checkpoints: required: some of {', '.join(CHECKPOINTS)}"),
        (bool(wrong), f"steps.select.checkpoints: {', '.join(wrong)}: choose among {', '.join(CHECKPOINTS)}"),
        (
            len(set(select.checkpoints)) != len(select.checkpoints),
            "steps.select.checkpoints: one named twice",
        ),
        (not select.length_penalties, "steps.select.length_penalties: required: one or more numbers"),
        (
            not all(0 <= p <= MAX_LENGTH_PENALTY for p in select.length_penalties),
            f"steps.select.length_penalties: each in [0, {MAX_LENGTH_PENALTY:g}]",
        ),
        (
            len(set(select.length_penalties)) != len(select.length_penalties),
            "steps.select.length_penalties: one named twice",
        ),
        (not 1 <= select.beam <= MAX_BEAM, f"steps.select.beam: must be in [1, {MAX_BEAM}]"),
        *_weight_rules("rerank_weights", select.rerank_weights),
        *_weight_rules("backward_weights", select.backward_weights),
    ]


def _weight_rules(name: str, weights: tuple[float, ...]) -> list[Rule]:
    return [
        (
            not all(0 < w <= MAX_RERANK_WEIGHT for w in weights),
            f"steps.select.{name}: each in (0, {MAX_RERANK_WEIGHT:g}] (the plain beam is one anyway)",
        ),
        (len(set(weights)) != len(weights), f"steps.select.{name}: one named twice"),
    ]


def _student_rules(steps: Steps, data: PipelineData) -> list[Rule]:
    """Distillation, its filter, the student and its export go together."""
    distil, filtering, export = steps.distillation, steps.filter, steps.export
    tsv = [c.name for c in data.corpora if c.tsv]
    beams, within = (steps.student.beams, steps.student.within) if steps.student else ((), 0.0)
    return [
        (not all(1 <= b <= MAX_BEAM for b in beams), f"steps.student.beams: each in [1, {MAX_BEAM}]"),
        (len(set(beams)) != len(beams), "steps.student.beams: one named twice"),
        (not 0 <= within <= MAX_WITHIN, f"steps.student.within: must be in [0, {MAX_WITHIN:g}] (val BLEU)"),
        (
            (distil is None) != (steps.student is None),
            "steps.student: a student learns what the teacher translates: give steps.distillation and "
            "steps.student together",
        ),
        *(
            rule
            for d in ([distil] if distil is not None else [])
            for rule in (
                (not d.sources, f"steps.distillation.sources: required: {' and/or '.join(SOURCES)}"),
                (
                    not set(d.sources) <= set(SOURCES) or len(set(d.sources)) != len(d.sources),
                    f"steps.distillation.sources: each of {', '.join(SOURCES)} at most once",
                ),
                (
                    "mono" in d.sources and not data.mono_src,
                    "steps.distillation.sources: mono needs data.mono_src",
                ),
                (
                    "train" in d.sources and bool(tsv),
                    f"steps.distillation.sources: train reads source files: give {', '.join(tsv)} src, tgt",
                ),
                (d.lines < 0, "steps.distillation.lines: must be >= 0 (0: all)"),
            )
        ),
        (filtering is not None and distil is None, "steps.filter: filters what steps.distillation makes"),
        (
            filtering is not None and steps.backward is None,
            "steps.filter: scores with steps.backward's model",
        ),
        (filtering is not None and not 0 < filtering.keep <= 1, "steps.filter.keep: must be in (0, 1]"),
        (
            export is not None and steps.student is None and steps.teacher.ensemble > 1,
            "steps.export: exports the student, or one teacher: an ensemble is not one model",
        ),
        (
            export is not None and export.quantize not in EXPORT_TYPES,
            f"steps.export.quantize: one of {', '.join(EXPORT_TYPES)}",
        ),
        (export is not None and export.shortlist < 0, "steps.export.shortlist: must be >= 0 (0: none)"),
    ]


def _is_control_token(token: str) -> bool:
    return token.startswith("<") and token.endswith(">") and len(token) > 2 and " " not in token


def read_pipeline(path: Path) -> PipelineConfig:
    """The pipeline in `path`, every problem of it listed in one `ConfigError`."""
    errors: list[str] = []
    raw = _empty_as_braces(PipelineConfig, read_yaml_mapping(path, "pipeline"))
    cfg = dataclass_from_dict(PipelineConfig, raw, errors)
    if not errors:
        errors = cfg.problems()
    if errors:
        raise ConfigError(f"invalid pipeline {path}:\n  " + "\n  ".join(errors))
    return cfg


def _empty_as_braces(cls: type, raw: Any) -> Any:
    """`raw` with each section of `cls` written empty (YAML null) read as `{}`, at every depth."""
    if not isinstance(raw, dict):
        return raw
    hints = typing.get_type_hints(cls)
    found = {f.name: _section(hints[f.name]) for f in dataclasses.fields(cls) if f.name in raw}
    return raw | {
        key: _empty_as_braces(section, {} if raw[key] is None else raw[key])
        for key, section in found.items()
        if section is not None
    }


def _section(kind: Any) -> type | None:
    """The dataclass `X` when a field's type is `X` or `X | None` (a section), else None."""
    found = [k for k in (kind, *typing.get_args(kind)) if isinstance(k, type) and dataclasses.is_dataclass(k)]
    return found[0] if found else None
