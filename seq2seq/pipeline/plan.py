"""From a pipeline file to its steps, in order: the one place that decides which steps a pipeline
has and what each reads from the others.

    backward            s2s train: target -> source                       (steps.backward)
    back_translation    s2s filter, s2s translate                         (steps.back_translation)
    teacher             s2s train; an ensemble: teacher_1, teacher_2, ...
    right_to_left       s2s train: the teacher written right to left     (steps.right_to_left)
    select_teacher      s2s average, s2s evaluate (each candidate), s2s select
    distillation        s2s filter, s2s translate (the teacher)           (steps.distillation)
    filter              s2s score, s2s filter                             (steps.filter)
    student             s2s train                                         (steps.student)
    select_student      s2s average, s2s evaluate, s2s select
    export              s2s export                                        (steps.export)
    evaluate            s2s evaluate: every model on every test set

The plan is made again before each step runs: a step that decodes with a model chosen on val has
that choice in its commands once it is made, and placeholders until then (`seq2seq.pipeline.val_choice`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.config.data import DataConfig
from seq2seq.errors import ConfigError
from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.corpus_steps import back_translation_step, distillation_step, filter_step
from seq2seq.pipeline.delivery import Scored, evaluate_step, export_step, scored
from seq2seq.pipeline.step import Step
from seq2seq.pipeline.trainings import BaseConfig, check_trainings, roles, teacher_runs, training_step
from seq2seq.pipeline.val_choice import chosen, select_step
from seq2seq.pipeline.workspace import Workspace


@dataclass(frozen=True)
class Plan:
    workspace: Workspace
    steps: tuple[Step, ...]
    scored: tuple[Scored, ...]  # what the evaluation scores: the final table's rows


def check_pipeline(cfg: PipelineConfig) -> None:
    """What the file alone cannot show: its corpora as a run config's data section, and every
    training's run config (the base with its overrides); one `ConfigError` lists every problem."""
    base = BaseConfig.read(Path(cfg.training.base))
    bt = cfg.steps.back_translation
    tokens = (*base.control_tokens, *([bt.tag] if bt is not None and bt.tag else []))
    data = DataConfig(corpora=cfg.data.corpora, valid_src=cfg.data.valid.src, valid_tgt=cfg.data.valid.tgt)
    if problems := data.problems(control_tokens=tokens):
        raise ConfigError("invalid pipeline:\n  " + "\n  ".join(problems))
    check_trainings(cfg, Workspace.of(cfg), base)


def make_plan(cfg: PipelineConfig, unchosen: frozenset[str] = frozenset()) -> Plan:
    """The steps as the workspace stands now (`check_pipeline` first: a config that does not load is
    an error here); `unchosen`: choice steps that will choose again, whose choices are not known."""
    ws, base, s = Workspace.of(cfg), BaseConfig.read(Path(cfg.training.base)), cfg.steps
    runs, student_run = teacher_runs(cfg, ws), ws.folder("student")
    teacher = chosen(cfg, ws, "teacher", runs, unchosen)
    trainings = roles(cfg, ws, base, teacher.checkpoints[0])
    steps: list[Step] = []
    if s.backward is not None:
        steps.append(training_step(cfg, trainings["backward"]))
    if s.back_translation is not None:
        steps.append(back_translation_step(cfg, ws, s.back_translation, ws.folder("backward")))
    steps += [training_step(cfg, trainings[run.name]) for run in runs]
    if s.right_to_left is not None:
        steps.append(training_step(cfg, trainings["right_to_left"]))
    steps.append(select_step(cfg, ws, "teacher", runs))
    models, final = [teacher], teacher
    if s.distillation is not None and s.student is not None:
        steps.append(distillation_step(cfg, ws, s.distillation, teacher))
        if s.filter is not None:
            steps.append(filter_step(ws, s.filter, teacher, ws.folder("backward")))
        waits = teacher.pending if s.student.shrink else ""
        steps += [
            training_step(cfg, trainings["student"], waits),
            select_step(cfg, ws, "student", (student_run,)),
        ]
        final = chosen(cfg, ws, "student", (student_run,), unchosen)
        models.append(final)
    if s.export is not None:
        steps.append(export_step(ws, s.export, final))
    exported = final if s.export is not None else None
    steps.append(evaluate_step(cfg, ws, models, exported))
    return Plan(ws, tuple(steps), tuple(scored(cfg, ws, models, exported)))
