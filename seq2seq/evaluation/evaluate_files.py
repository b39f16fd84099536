"""The files `s2s evaluate` reads and writes, as its command line names them: plain values, checked
and read by `seq2seq.evaluation.evaluation_plan`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seq2seq.flags import argument, option


@dataclass(frozen=True)
class EvaluateFiles:
    """The files `s2s evaluate` reads and writes, as its command line names them."""

    run_dir: Path | None = argument(
        "Run directory: translate --src with it; with --hyp, only adds its learning curves.", None
    )
    hyps: tuple[Path, ...] = option(  # none: translate --src
        (), "Hypotheses to score; repeat to compare systems (the first is the baseline).", "--hyp"
    )
    refs: tuple[Path, ...] = option((), "References, aligned by line; repeat for more.", "--ref")
    src: Path | None = option(None, "Source text: translated with RUN_DIR; with --hyp, shown in the report.")
    out: Path | None = option(None, "Translations of --src [default: RUN_DIR/SRC.CHECKPOINT.hyp].")
    json_file: Path | None = option(None, "Write scores, signatures, checksums and settings here.", "--json")
    report: Path | None = option(  # a directory for index.html
        None, "Write a self-contained HTML report to DIR/index.html (needs matplotlib)."
    )
