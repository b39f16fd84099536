"""`s2s export`'s work: a run's weights and tokenizer written for another engine, CTranslate2 or
Hugging Face transformers, after every option has been checked against the format."""

from __future__ import annotations

import logging

from seq2seq.commands.jobs import FORMATS, ExportJob
from seq2seq.ct2.export_dir import QUANTIZATIONS, is_int8
from seq2seq.ct2.shortlist import ShortlistSize
from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_new_directory, check_outputs
from seq2seq.models.family import export_refusal
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import readable_run_inputs

log = logging.getLogger(__name__)


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
    check_outputs({"OUT_DIR": out_dir}, readable_run_inputs(run_dir, [job.checkpoint]))
    if (why := export_refusal(RunDir(run_dir).load_config().model)) is not None:
        raise Seq2SeqError(f"s2s export cannot write {run_dir}: {why}")
    check_new_directory(out_dir)
    if job.format == "huggingface":
        from seq2seq.hf.export import export_huggingface  # torch: after the checks

        export_huggingface(run_dir, job.checkpoint, out_dir, job.decoding)
        return f"exported to {out_dir}; load it with transformers' AutoModelForSeq2SeqLM.from_pretrained"
    if job.full_range_int8 and not is_int8(job.quantize):
        raise Seq2SeqError("--full-range-int8 is for --quantize int8 or int8_float32")
    size = ShortlistSize(job.shortlist, job.shortlist_common) if job.shortlist else None
    from seq2seq.ct2.conversion import export_ctranslate2  # torch: after the checks
    from seq2seq.ct2.export_choice import reference_gap

    weights = export_ctranslate2(
        run_dir, job.checkpoint, out_dir, job.quantize, job.full_range_int8, size, job.decoding
    )
    gap = reference_gap(weights, out_dir)
    if gap is not None:
        log.warning("%s", gap)
    return f"exported to {out_dir}; translate with: s2s translate {out_dir} --engine ctranslate2"
