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

from pathlib import Path

from seq2seq.pipeline.choice import Decoder
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import BackTranslationStep, DistillationStep, FilterStep, PipelineConfig
from seq2seq.pipeline.step import Outputs, Step
from seq2seq.pipeline.workspace import Workspace
from seq2seq.run.layout import RunDir


def back_translation_step(
    cfg: PipelineConfig, ws: Workspace, bt: BackTranslationStep, backward: Path
) -> Step:
    mono = [Path(p) for p in cfg.data.mono_tgt]
    targets = [Path(c.tgt) for c in cfg.data.corpora]
    pick = (
        *(arg for p in mono for arg in ("--src", str(p))), "--out-src", str(ws.mono), "--unique",
        *(arg for p in targets for arg in ("--exclude", str(p))), *_lines(bt.lines),
    )  # fmt: skip
    drawn = ("--top-k", str(bt.top_k), "--top-p", f"{bt.top_p:g}", "--temperature", f"{bt.temperature:g}")
    search = ("--sampling", *drawn, "--seed", str(bt.seed)) if bt.sampling else ("--beam", str(bt.beam))
    translate = (
        str(backward), "--checkpoint", "best", *search, "--engine", cfg.engine,
        "-i", str(ws.mono), "-o", str(ws.synthetic),
    )  # fmt: skip
    commands = (Command(Verb.FILTER, pick), Command(Verb.TRANSLATE, translate, again=("--restart",)))
    reads = (*mono, *targets, RunDir(backward).finished_file)
    what = f"back-translate {ws.tgt} text into synthetic {ws.src} sources"
    return Step("back_translation", what, commands, reads, (ws.mono, ws.synthetic), Outputs(), ws.mono.parent)


def distillation_step(cfg: PipelineConfig, ws: Workspace, distil: DistillationStep, teacher: Decoder) -> Step:
    sources = [Path(c.src) for c in cfg.data.corpora] if "train" in distil.sources else []
    sources += [Path(p) for p in cfg.data.mono_src] if "mono" in distil.sources else []
    pick = (
        *(arg for p in sources for arg in ("--src", str(p))),
        "--out-src", str(ws.distill_source), "--unique", *_lines(distil.lines),
    )  # fmt: skip
    translate = (
        *teacher.args(),
        "--engine",
        cfg.engine,
        "-i",
        str(ws.distill_source),
        "-o",
        str(ws.distilled),
    )
    commands = (Command(Verb.FILTER, pick), Command(Verb.TRANSLATE, translate, again=("--restart",)))
    what = f"the {teacher.name} translates {' and '.join(distil.sources)} sources for the student"
    writes = (ws.distill_source, ws.distilled)
    reads = (*sources, *teacher.reads)
    return Step(
        "distillation", what, commands, reads, writes, Outputs(), ws.distilled.parent, teacher.pending
    )


def filter_step(ws: Workspace, filtering: FilterStep, teacher: Decoder, backward: Path) -> Step:
    source, translation = str(ws.distill_source), str(ws.distilled)
    if filtering.score == "dual":
        score = (*teacher.model_args(), "--src", source, "--tgt", translation, "--reverse", str(backward))
        reads: tuple[Path, ...] = teacher.reads
    else:  # how likely the backward model finds the source, given the translation
        score = (str(backward), "--checkpoint", "best", "--src", translation, "--tgt", source)
        reads = ()
    kept_src, kept_tgt = ws.kept
    keep = (
        "--src", source, "--tgt", translation, "--scores", str(ws.scores), "--keep", f"{filtering.keep:g}",
        "--out-src", str(kept_src), "--out-tgt", str(kept_tgt),
    )  # fmt: skip
    commands = (Command(Verb.SCORE, (*score, "-o", str(ws.scores))), Command(Verb.FILTER, keep))
    reads = (ws.distill_source, ws.distilled, RunDir(backward).finished_file, *reads)
    what = f"keep the best {filtering.keep:.0%} of the distilled pairs by {filtering.score} score"
    pending = teacher.pending if filtering.score == "dual" else ""
    return Step(
        "filter", what, commands, reads, (ws.scores, kept_src, kept_tgt), Outputs(), ws.scores.parent, pending
    )


def _lines(lines: int) -> tuple[str, ...]:
    return ("--lines", str(lines)) if lines else ()
