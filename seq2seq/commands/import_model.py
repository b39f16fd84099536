"""`s2s import`'s work: a MarianMT model directory (`seq2seq.hf.marian`) written as an s2s run, which
translate, evaluate, score, serve, export and `train.init_from` take as they take a trained one.

The run holds what a trained run's readers need: config.yaml (the model and tokenizer sections a
fine-tuning config copies; placeholder data files to replace), tokenizer/spm.src.model and
spm.tgt.model, inputs.json and checkpoints/best.pt. It is written into a scratch directory and
renamed, so it is never half-made.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from seq2seq.commands.jobs import ImportJob
from seq2seq.config import save_config
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, tokenizer_files
from seq2seq.files import atomic_directory, check_new_directory
from seq2seq.hf.marian_vocab import MarianImportError
from seq2seq.run.layout import RunDir

if TYPE_CHECKING:
    from seq2seq.hf.marian import ImportedModel

log = logging.getLogger(__name__)


def import_model(job: ImportJob) -> str:
    """Write the MarianMT model in JOB's directory as a new run; returns what to do next, for the user."""
    if not job.model_dir.is_dir():
        raise MarianImportError(f"{job.model_dir} is not a directory (a MarianMT model's, with config.json)")
    check_new_directory(job.run_dir)
    from seq2seq.hf.marian import read_marian  # torch: after the checks

    imported = read_marian(job.model_dir, job.run_dir)
    with atomic_directory(job.run_dir) as scratch:
        write_run(imported, RunDir(scratch))
    log.info("imported %s into %s", job.model_dir, job.run_dir)
    return f"imported {job.model_dir} into {job.run_dir}; translate with: s2s translate {job.run_dir}"


def write_run(imported: ImportedModel, run: RunDir) -> None:
    """The run's files in `run`: config, tokenizers, checksums, the weights as checkpoints/best.pt."""
    from seq2seq.checkpoint import atomic_save, checkpoint_inputs
    from seq2seq.models.encoder_decoder import Seq2SeqTransformer

    cfg = imported.config
    files = tokenizer_files(run.tokenizer_dir, joint=False)
    run.tokenizer_dir.mkdir(parents=True)
    files["src"].write_bytes(imported.src.model)
    files["tgt"].write_bytes(imported.tgt.model)
    tokenizers = load_tokenizers(run.tokenizer_dir, joint=False)  # s2s's own checks of its ids
    model = Seq2SeqTransformer(cfg.model, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size)
    model.load_state_dict(imported.weights, strict=True)  # every tensor there, of its shape
    sums = tokenizer_checksums(run.tokenizer_dir, joint=False)
    save_config(cfg, run.config_file)
    run.record_inputs(tokenizer=sums)
    state = {"model": model.state_dict(), "inference": "model", **checkpoint_inputs(cfg, sums)}
    atomic_save(state, run.checkpoint_file("best"))
    Path(run.marker_file).touch()
