"""What a line's translation passes through besides the engine, chosen once from the decode options:
a pivot language (`--pivot`), then a reranking of each line's whole beam, by expected utility
(`--mbr`, `seq2seq.translate.mbr`) or by second runs (`--rerank`: reverse runs, the noisy
channel, or right-to-left runs; `seq2seq.translate.rescoring`), and the recasing of lines in ALL
CAPS or Title Case around all of it (`--restore-case`, `seq2seq.translate.casing`). `s2s translate`
(lines, `--sentences` and documents) and `s2s evaluate` take their line translator here.
"""

from __future__ import annotations

from pathlib import Path

from seq2seq.translate.casing import CaseRestored, Recaser
from seq2seq.translate.direction import Direction
from seq2seq.translate.engine import Engine, LineTranslator
from seq2seq.translate.mbr import MinimumBayesRisk
from seq2seq.translate.options import DecodeOptions
from seq2seq.translate.pivot import Pivoted


def line_translator(
    engine: Engine, direction: Direction, options: DecodeOptions, run_dir: Path
) -> LineTranslator:
    """ENGINE's lines into `direction`: through its pivot if it names one, each beam reranked as
    `options.rerank` asks, and around all of it, with `options.restore_case`, lines in ALL CAPS or
    Title Case recased as the training source of the run in `run_dir` writes its words."""
    rerank = options.rerank
    lines: LineTranslator = Pivoted(engine, direction) if direction.pivot else engine
    if rerank.mbr is not None:
        lines = MinimumBayesRisk(lines, rerank.mbr)
    elif rerank.runs:
        from seq2seq.translate.rescoring import Rescored  # s2s's decoder: torch, only when asked

        lines = Rescored.load(lines, rerank.runs, rerank.weights)
    if options.restore_case:
        lines = CaseRestored(lines, Recaser.of_run(run_dir, engine.tokenizers.src))
    return lines
