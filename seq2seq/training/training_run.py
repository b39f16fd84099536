"""One `s2s train` after its set-up: the prepared corpus loaded, the model at step 0 (with train.lora,
its adapters beside the frozen weights), the `Trainer` run, and how it ended recorded.

    RunPlan + RunInputs (`seq2seq.training.setup`) -> `train` -> Trainer.fit -> finished.json
"""

from __future__ import annotations

import logging

import torch

from seq2seq.checkpoint import checkpoint_inputs
from seq2seq.data.augmented import corpus_augmenter
from seq2seq.data.manifest import describe
from seq2seq.data.prepared import corpus_mixture, load_prepared, read_manifests
from seq2seq.run.finished import clear_finished, record_finished
from seq2seq.training.adapters import adapt
from seq2seq.training.distributed import DistInfo
from seq2seq.training.setup import RunInputs
from seq2seq.training.state import Progress, initial_model
from seq2seq.training.trainer import Trainer
from seq2seq.training.training_plan import RunPlan

# the trainer's logger: these lines were always the trainer's, and train.log names the logger
log = logging.getLogger("seq2seq.training.trainer")


def train(plan: RunPlan, inputs: RunInputs, info: DistInfo, device: torch.device) -> tuple[Progress, bool]:
    """Build the model and train it on the prepared inputs, on `device` (the plan's, `plan_training`);
    a `resume` plan continues from last.pt.

    Returns where training ended and whether it was interrupted (Ctrl-C) rather than finished: what
    rank 0 records in the run (`seq2seq.run.finished`), whose record is removed first."""
    cfg, run, tokenizers = plan.cfg, plan.run, inputs.tokenizers
    if info.is_main:
        clear_finished(run)
    corpora = cfg.data.training_corpora()
    links = cfg.train.guided_alignment.active
    train_data = load_prepared(inputs.corpus_dir, corpora, links, tokenizers.targets)
    manifests = read_manifests(inputs.corpus_dir, corpora)
    weights = {c.name: c.weight for c in corpora}
    log.info("training corpus, memory-mapped from %s:\n%s", inputs.corpus_dir, describe(manifests, weights))
    model = initial_model(cfg.model, cfg.train.seed, tokenizers, inputs.init)
    origin = checkpoint_inputs(cfg, inputs.tokenizer_sums)
    adapters = adapt(model, cfg, run, plan.mode == "resume", origin, write=info.is_main)
    mixture = corpus_mixture(manifests, corpora, cfg.data.temperature)
    augment = corpus_augmenter(train_data, corpora, manifests, tokenizers, cfg.data.max_len)
    sums, valid = inputs.tokenizer_sums, inputs.valid
    trainer = Trainer(
        cfg, run, model, tokenizers, sums, train_data, valid, info, device, mixture, augment, adapters
    )
    if plan.mode == "resume":
        trainer.resume()
    try:
        progress = trainer.fit()
    finally:
        trainer.records.close()
    if info.is_main and trainer.ending is not None:
        record_finished(run, progress.step, progress.epoch, trainer.ending)
    return progress, trainer.stop.requested
