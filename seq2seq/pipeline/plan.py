"""From a pipeline file to its steps, in order: the one place that decides which steps a pipeline
has and what each reads from the others.

    backward            s2s train: target -> source                       (steps.backward)
    back_translation    s2s filter, s2s translate                         (steps.back_translation)
    teacher             s2s train; an ensemble: teacher_1, teacher_2, ...
    select_teacher      s2s average, s2s evaluate (each candidate), s2s select
    distillation        s2s filter, s2s translate (the teacher)           (steps.distillation)
    filter              s2s score, s2s filter                             (steps.filter)
    student             s2s train                                         (steps.student)
    select_student      s2s average, s2s evaluate, s2s select
    export              s2s export                                        (steps.export)
    evaluate            s2s evaluate: every model on every test set

The plan is made again before each step runs: a step that decodes with a model chosen on val has
that choice's values in its commands once the choice is made, and placeholders until then
(`seq2seq.pipeline.choice`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.config.data import DataConfig
from seq2seq.errors import ConfigError
from seq2seq.pipeline.choice import Decoder, chosen, select_step
from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.corpora import back_translation_step, distillation_step, filter_step
from seq2seq.pipeline.delivery import Scored, evaluate_step, export_step, scored
from seq2seq.pipeline.step import Step
from seq2seq.pipeline.trainings import (
    BaseConfig,
    backward_overrides,
    corpus_files,
    student_overrides,
    teacher_overrides,
    teacher_runs,
    training_step,
)
from seq2seq.pipeline.workspace import Workspace


@dataclass(frozen=True)
class Plan:
    workspace: Workspace
    steps: tuple[Step, ...]
    scored: tuple[Scored, ...]  # what the evaluation scores: the final table's rows

    def index(self, name: str) -> int:
        return [s.name for s in self.steps].index(name)


def make_plan(cfg: PipelineConfig) -> Plan:
    """The pipeline's steps as the workspace stands; every run config a training would load is
    checked, and every problem is reported together in one `ConfigError`."""
    ws = Workspace(Path(cfg.workspace), cfg.src_lang, cfg.tgt_lang)
    base = BaseConfig.read(Path(cfg.training.base))
    _check_data(cfg, base)
    problems: list[str] = []
    steps = _trainings_and_corpora(cfg, ws, base, problems)
    if problems:
        raise ConfigError(
            "invalid pipeline: a training's run config does not load:\n  " + "\n  ".join(problems)
        )
    return Plan(ws, *steps)


def _trainings_and_corpora(
    cfg: PipelineConfig, ws: Workspace, base: BaseConfig, problems: list[str]
) -> tuple[tuple[Step, ...], tuple[Scored, ...]]:
    s = cfg.steps
    valid = [Path(cfg.data.valid.src), Path(cfg.data.valid.tgt)]
    parallel = [*corpus_files(cfg.data.corpora), *valid]
    steps: list[Step | None] = []
    backward = ws.folder("backward")
    if s.backward is not None:
        what = f"train the backward model ({cfg.tgt_lang} -> {cfg.src_lang})"
        steps.append(
            _trained(problems, cfg, "backward", what, lambda: backward_overrides(cfg, base), parallel)
        )
    if s.back_translation is not None:
        steps.append(back_translation_step(cfg, ws, s.back_translation, backward))
    runs = teacher_runs(cfg, ws)
    synthetic = [ws.mono, ws.synthetic] if s.back_translation is not None else []
    for i, run in enumerate(runs):
        what = f"train the teacher ({cfg.src_lang} -> {cfg.tgt_lang})" + (
            f", member {i + 1}" if len(runs) > 1 else ""
        )
        shared = [runs[0] / "tokenizer"] if i else []
        overrides = lambda i=i: teacher_overrides(cfg, ws, base, i + 1)  # noqa: E731
        steps.append(_trained(problems, cfg, run.name, what, overrides, [*parallel, *synthetic, *shared]))
    steps.append(select_step(cfg, ws, "teacher", runs))
    teacher = chosen(cfg, ws, "teacher", runs)
    models, final = [teacher], teacher
    if s.distillation is not None and s.student is not None:
        steps.append(distillation_step(cfg, ws, s.distillation, teacher))
        if s.filter is not None:
            steps.append(filter_step(ws, s.filter, teacher, backward))
        student = _student(cfg, ws, base, teacher, problems)
        steps += [student, select_step(cfg, ws, "student", (ws.folder("student"),))]
        final = chosen(cfg, ws, "student", (ws.folder("student"),))
        models.append(final)
    exported = final if s.export is not None else None
    if s.export is not None:
        steps.append(export_step(ws, s.export, final))
    steps.append(evaluate_step(cfg, ws, models, exported))
    return tuple(step for step in steps if step is not None), tuple(scored(cfg, ws, models, exported))


def _student(
    cfg: PipelineConfig, ws: Workspace, base: BaseConfig, teacher: Decoder, problems: list[str]
) -> Step | None:
    assert cfg.steps.student is not None
    shrink = cfg.steps.student.shrink
    pairs = list(ws.kept) if cfg.steps.filter is not None else [ws.distill_source, ws.distilled]
    what = "train the student on the distilled pairs" + (", shrunk from the teacher" if shrink else "")
    overrides = lambda: student_overrides(cfg, ws, base, teacher.checkpoints[0])  # noqa: E731
    reads = [*pairs, Path(cfg.data.valid.src), Path(cfg.data.valid.tgt)]
    step = _trained(problems, cfg, "student", what, overrides, reads)
    if step is None or not shrink or not teacher.pending:
        return step
    from dataclasses import replace

    return replace(step, pending=teacher.pending)


def _trained(problems: list[str], cfg: PipelineConfig, name: str, what: str, overrides, reads) -> Step | None:
    """The training step, or None with its config's problems added to `problems`."""
    try:
        return training_step(cfg, name, what, overrides(), reads)
    except ConfigError as e:
        problems.append(str(e))
        return None


def _check_data(cfg: PipelineConfig, base: BaseConfig) -> None:
    """The corpora and the validation set, checked as a run config checks its data section."""
    bt = cfg.steps.back_translation
    tokens = (*base.control_tokens, *([bt.tag] if bt is not None and bt.tag else []))
    data = DataConfig(corpora=cfg.data.corpora, valid_src=cfg.data.valid.src, valid_tgt=cfg.data.valid.tgt)
    if problems := data.problems(control_tokens=tokens):
        raise ConfigError("invalid pipeline:\n  " + "\n  ".join(problems))
