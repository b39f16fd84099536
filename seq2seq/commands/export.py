"""`s2s export`'s work: a run's weights and tokenizer written for another engine, CTranslate2 or
Hugging Face transformers, after every option has been checked against the format."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from seq2seq.config.bounds import MAX_VOCAB
from seq2seq.ct2.conversion import QUANTIZATIONS, export_ctranslate2
from seq2seq.ct2.export_choice import reference_gap
from seq2seq.ct2.export_dir import is_int8
from seq2seq.ct2.shortlist import ShortlistSize
from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs
from seq2seq.flags import argument, option
from seq2seq.hf.pegasus import export_huggingface
from seq2seq.run.layout import RUN_DIR
from seq2seq.run.parts import run_inputs

log = logging.getLogger(__name__)

FORMATS = ("ctranslate2", "huggingface")


@dataclass(frozen=True)
class ExportJob:
    """What `s2s export` was asked, besides the run and the directory to export into."""

    run_dir: Path = RUN_DIR()
    out_dir: Path = argument("New (or empty) directory for the exported model.")
    format: str = option("ctranslate2", "The format to export to: ctranslate2 or huggingface.")
    checkpoint: str = option("best", "best, last, a name in checkpoints/, or a path.")
    quantize: str | None = option(  # ctranslate2: a compute type to store the weights in
        None, "ctranslate2: store the weights as int8, int8_float32, int16, float16 or bfloat16."
    )
    full_range_int8: bool = option(  # int8 weights in 8 bits, not 7 (CPUs with VNNI or AMX, GPUs)
        False,
        "int8 weights in 8 bits, not 7: only for CPUs with AVX-512 VNNI or AMX, ARM or a GPU (on an "
        "AVX2-only CPU, full-range int8 products overflow).",
        "--full-range-int8",
    )
    shortlist: int = option(  # target pieces per source piece in a lexical shortlist; 0: none
        0,
        "ctranslate2: a lexical shortlist of this many target pieces per source piece, counted from the "
        "run's training pairs; CTranslate2 then scores only a batch's candidates (0: none).",
        between=(0, MAX_VOCAB),
        why="no vocabulary is larger",
    )
    shortlist_common: int = option(  # with a shortlist: the most frequent target pieces, always scored
        100,
        "With --shortlist: the most frequent target pieces, always scored.",
        between=(0, MAX_VOCAB),
        why="no vocabulary is larger",
    )


def export(job: ExportJob) -> str:
    """Export the run's weights into JOB's directory; returns how to use the export, for the user."""
    run_dir, out_dir = job.run_dir, job.out_dir
    if job.format not in FORMATS:
        raise Seq2SeqError(f"--format {job.format!r}: s2s exports to {' or '.join(FORMATS)}")
    if job.quantize is not None and job.format != "ctranslate2":
        raise Seq2SeqError("--quantize is for --format ctranslate2; a Hugging Face export holds fp32 weights")
    if job.shortlist and job.format != "ctranslate2":
        raise Seq2SeqError("--shortlist is for --format ctranslate2 (CTranslate2's vocabulary map)")
    if job.quantize is not None and job.quantize not in QUANTIZATIONS:
        raise Seq2SeqError(f"--quantize {job.quantize!r}: choose one of {', '.join(QUANTIZATIONS)}")
    check_outputs({"OUT_DIR": out_dir}, run_inputs(run_dir, [job.checkpoint]))
    if job.format == "huggingface":
        export_huggingface(run_dir, job.checkpoint, out_dir)
        return f"exported to {out_dir}; load it with transformers' AutoModelForSeq2SeqLM.from_pretrained"
    if job.full_range_int8 and not is_int8(job.quantize):
        raise Seq2SeqError("--full-range-int8 is for --quantize int8 or int8_float32")
    size = ShortlistSize(job.shortlist, job.shortlist_common) if job.shortlist else None
    weights = export_ctranslate2(run_dir, job.checkpoint, out_dir, job.quantize, job.full_range_int8, size)
    gap = reference_gap(weights, out_dir)
    if gap is not None:
        log.warning("%s", gap)
    return f"exported to {out_dir}; translate with: s2s translate {out_dir} --engine ctranslate2"
