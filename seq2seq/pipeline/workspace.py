"""Where each file of a pipeline lies: the workspace (`Workspace`).

    WORKSPACE/
      backward/  teacher/ (teacher_1/, teacher_2/, ...: an ensemble)  right_to_left/  student/
                                              run directories
      back_translation/mono.TGT, mono.SRC     the target-side text, and its synthetic sources
      select_teacher/, select_student/        each candidate's val translations and scores
                                              (CHECKPOINT_lpX.hyp/.json), selection.json: the choice
      distillation/source.SRC, source.TGT     what the teacher translated, and its translations
      filter/scores.tsv, kept.SRC, kept.TGT   `s2s score`'s scores, the pairs kept for the student
      export/                                 the CTranslate2 export
      evaluate/MODEL.TEST.hyp, .json          each model's translations of each test set, scored
      records/STEP.json                       what each step did (`seq2seq.pipeline.records`)
      logs/STEP.log                           each step's commands and their output
      table.json, table.md                    the final table
      .s2s-pipeline                           held (an OS lock) while a pipeline runs here

A step writes only into its own folder, but the choice on val, which averages a run's checkpoints
into that run's checkpoints/averaged.pt, where fine-tuning (`train.init_from`) finds them.
"""

from __future__ import annotations

from pathlib import Path

from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.records import RECORDS


class Workspace:
    def __init__(self, root: Path, src_lang: str, tgt_lang: str) -> None:
        self.root, self.src, self.tgt = root, src_lang, tgt_lang

    @staticmethod
    def of(cfg: PipelineConfig) -> Workspace:
        return Workspace(Path(cfg.workspace), cfg.src_lang, cfg.tgt_lang)

    def folder(self, step: str) -> Path:
        return self.root / step

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log_file(self, step: str) -> Path:
        return self.logs / f"{step}.log"

    @property
    def records(self) -> Path:
        """Each step's record (`seq2seq.pipeline.records`)."""
        return self.root / RECORDS

    @property
    def lock_file(self) -> Path:
        return self.root / ".s2s-pipeline"

    @property
    def table_files(self) -> tuple[Path, Path]:
        """The final table as JSON and as Markdown."""
        return self.root / "table.json", self.root / "table.md"

    # ---- back-translation -----------------------------------------------------------------------------

    @property
    def mono(self) -> Path:
        """The target-side text back-translated: each line once, none a training target."""
        return self.folder("back_translation") / f"mono.{self.tgt}"

    @property
    def synthetic(self) -> Path:
        """Its translations into the source language."""
        return self.folder("back_translation") / f"mono.{self.src}"

    # ---- distillation ---------------------------------------------------------------------------------

    @property
    def distill_source(self) -> Path:
        return self.folder("distillation") / f"source.{self.src}"

    @property
    def distilled(self) -> Path:
        return self.folder("distillation") / f"source.{self.tgt}"

    @property
    def scores(self) -> Path:
        return self.folder("filter") / "scores.tsv"

    @property
    def kept(self) -> tuple[Path, Path]:
        """The distilled pairs the filter keeps: sources, translations."""
        return self.folder("filter") / f"kept.{self.src}", self.folder("filter") / f"kept.{self.tgt}"

    # ---- choices, export, evaluation ------------------------------------------------------------------

    def candidate(
        self,
        select: str,
        checkpoint: str,
        length_penalty: float,
        rerank_weights: tuple[float, ...] = (),
        beam: int = 0,
    ) -> Path:
        """A candidate's val record (its translations beside it, `.hyp`); `rerank_weights`: its beam
        reranked by each model that may rerank it at that weight (0: not by that one; all 0: not
        reranked); `beam`: named where val tries several (0: the one beam)."""
        reranked = "_rerank" + "+".join(f"{w:g}" for w in rerank_weights) if any(rerank_weights) else ""
        sized = f"_beam{beam}" if beam else ""
        return self.folder(select) / f"{checkpoint}{sized}_lp{length_penalty:g}{reranked}.json"

    def selection(self, select: str) -> Path:
        return self.folder(select) / "selection.json"

    @property
    def export(self) -> Path:
        return self.folder("export")

    def evaluation(self, model: str, test: str) -> Path:
        """A model's record of a test set (its translations beside it, `.hyp`)."""
        return self.folder("evaluate") / f"{model}.{test}.json"
