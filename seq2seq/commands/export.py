"""`s2s export`'s work: a run's weights and tokenizer written for another engine, CTranslate2 or
Hugging Face transformers, after every option has been checked against the format."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from seq2seq.ct2.choice import reference_gap
from seq2seq.ct2.export import QUANTIZATIONS, export_ctranslate2
from seq2seq.ct2.export_dir import is_int8
from seq2seq.ct2.shortlist import ShortlistSize
from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs
from seq2seq.hf.export import export_huggingface
from seq2seq.run.parts import run_inputs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExportJob:
    """What `s2s export` was asked, besides the run and the directory to export into."""

    to: str = "ctranslate2"  # or huggingface
    checkpoint: str = "best"
    quantize: str | None = None  # ctranslate2: a compute type to store the weights in
    full_range_int8: bool = False  # int8 weights in 8 bits, not 7 (CPUs with VNNI or AMX, GPUs)
    shortlist: int = 0  # ctranslate2: target pieces per source piece in a lexical shortlist; 0: none
    shortlist_common: int = 100  # with a shortlist: the most frequent target pieces, always scored


def export(run_dir: Path, out_dir: Path, job: ExportJob) -> str:
    """Export RUN_DIR's weights into OUT_DIR; returns how to use the export, for the user."""
    if job.to not in ("ctranslate2", "huggingface"):
        raise Seq2SeqError(f"--to {job.to!r}: s2s exports to ctranslate2 or huggingface")
    if job.quantize is not None and job.to != "ctranslate2":
        raise Seq2SeqError("--quantize is for --to ctranslate2; a Hugging Face export holds fp32 weights")
    if job.shortlist and job.to != "ctranslate2":
        raise Seq2SeqError("--shortlist is for --to ctranslate2 (CTranslate2's vocabulary map)")
    if job.quantize is not None and job.quantize not in QUANTIZATIONS:
        raise Seq2SeqError(f"--quantize {job.quantize!r}: choose one of {', '.join(QUANTIZATIONS)}")
    check_outputs({"OUT_DIR": out_dir}, run_inputs(run_dir, [job.checkpoint]))
    if job.to == "huggingface":
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
