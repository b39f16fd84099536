"""The steps that make corpora: back-translation, distillation and its filter.

- `back_translation`: the target-side monolingual text, each line once and none a training target
  (`s2s filter --unique --exclude`), at most `lines` of it, translated by the backward model
  (`s2s translate`, beam search or sampling): synthetic sources for real targets.
- `distillation`: the sources the student will learn from (the corpora's, the source-side
  monolingual text, or both: each line once, at most `lines`), translated by the teacher as chosen on
  val.
- `filter`: the distilled pairs scored (`s2s score`: the backward model's log-probability of the
  source given the translation, or the dual cross-entropy of teacher and backward model) and the best
  `keep` share kept (`s2s filter --scores --keep`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from seq2seq.commands.filter import FilterJob, FilterRules
from seq2seq.commands.jobs import ScoreJob, Streams, TranslateJob
from seq2seq.flags import EMPTY, argv, switch
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import BackTranslationStep, DistillationStep, FilterStep, PipelineConfig
from seq2seq.pipeline.step import Outputs, Step
from seq2seq.pipeline.val_choice import Decoder
from seq2seq.pipeline.workspace import Workspace
from seq2seq.run.layout import RunDir
from seq2seq.translate.options import DecodeOverrides


def back_translation_step(
    cfg: PipelineConfig, ws: Workspace, bt: BackTranslationStep, backward: Path
) -> Step:
    mono = tuple(Path(p) for p in cfg.data.mono_tgt)
    targets = tuple(Path(c.tgt) for c in cfg.data.corpora)
    pick = FilterJob(mono, ws.mono, rules=FilterRules(exclude=targets, unique=True, lines=bt.lines))
    if bt.sampling:
        drawn = (bt.temperature, bt.top_k, bt.top_p, bt.seed)
        search = DecodeOverrides(
            sampling=True, temperature=drawn[0], top_k=drawn[1], top_p=drawn[2], seed=drawn[3]
        )
    else:
        search = DecodeOverrides(beam=bt.beam)
    translate = TranslateJob(backward, dataclasses.replace(search, checkpoints=("best",)), engine=cfg.engine)
    commands = (
        Command(Verb.FILTER, argv(pick)),
        Command(Verb.TRANSLATE, _into(translate, ws.mono, ws.synthetic), again=_restart()),
    )
    reads = (*mono, *targets, RunDir(backward).finished_file)
    what = f"back-translate {ws.tgt} text into synthetic {ws.src} sources"
    return Step("back_translation", what, commands, reads, (ws.mono, ws.synthetic), Outputs(), ws.mono.parent)


def distillation_step(cfg: PipelineConfig, ws: Workspace, distil: DistillationStep, teacher: Decoder) -> Step:
    sources = [Path(c.src) for c in cfg.data.corpora] if "train" in distil.sources else []
    sources += [Path(p) for p in cfg.data.mono_src] if "mono" in distil.sources else []
    pick = FilterJob(tuple(sources), ws.distill_source, rules=FilterRules(unique=True, lines=distil.lines))
    translate = _into(teacher.translating(cfg.engine), ws.distill_source, ws.distilled, teacher.holes)
    commands = (Command(Verb.FILTER, argv(pick)), Command(Verb.TRANSLATE, translate, again=_restart()))
    what = f"the {teacher.name} translates {' and '.join(distil.sources)} sources for the student"
    writes = (ws.distill_source, ws.distilled)
    reads = (*sources, *teacher.reads)
    return Step(
        "distillation", what, commands, reads, writes, Outputs(), ws.distilled.parent, teacher.pending
    )


def filter_step(ws: Workspace, filtering: FilterStep, teacher: Decoder, backward: Path) -> Step:
    source, translation = ws.distill_source, ws.distilled
    if filtering.score == "dual":
        asked = DecodeOverrides(checkpoints=teacher.checkpoints)
        score = ScoreJob(
            teacher.runs[0], source, translation, reverse=backward, asked=asked, output=ws.scores
        )
        reads: tuple[Path, ...] = teacher.reads
    else:  # how likely the backward model finds the source, given the translation
        best = DecodeOverrides(checkpoints=("best",))
        score = ScoreJob(backward, translation, source, asked=best, output=ws.scores)
        reads = ()
    kept_src, kept_tgt = ws.kept
    keep = FilterJob(
        (source,), kept_src, (translation,), kept_tgt, FilterRules(scores=ws.scores, keep=filtering.keep)
    )
    commands = (Command(Verb.SCORE, argv(score)), Command(Verb.FILTER, argv(keep)))
    reads = (ws.distill_source, ws.distilled, RunDir(backward).finished_file, *reads)
    what = f"keep the best {filtering.keep:.0%} of the distilled pairs by {filtering.score} score"
    pending = teacher.pending if filtering.score == "dual" else ""
    return Step(
        "filter", what, commands, reads, (ws.scores, kept_src, kept_tgt), Outputs(), ws.scores.parent, pending
    )


def _into(job: TranslateJob, source: Path, out: Path, holes: Mapping[str, str] = EMPTY) -> tuple[str, ...]:
    """`s2s translate`'s arguments for `job` from the file `source` into `out`."""
    return (*argv(job, holes), *argv(Streams(source, out)))


def _restart() -> tuple[str, ...]:
    """How a translation begins its output again, not continuing what an interrupted one left."""
    return (switch(TranslateJob, "restart"),)
