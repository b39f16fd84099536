"""`s2s train` and `s2s prepare`: a config's tokenizer, corpus and model made in its run directory."""

from __future__ import annotations

import contextlib
import logging

import typer

from seq2seq.cli.common import setup_logging
from seq2seq.cli.expansion import verb
from seq2seq.cli.group import commands
from seq2seq.errors import EXIT_INTERRUPTED
from seq2seq.training.jobs import PrepareJob, TrainJob

app = commands()
log = logging.getLogger("seq2seq")


@verb(app)
def train(job: TrainJob) -> None:
    """Train a tokenizer and a model as CONFIG describes, into its run directory."""
    from seq2seq.training.request import run_mode, train_request

    source = job.source
    request = train_request(
        source.config, list(source.overrides), job.device, run_mode(job.resume, job.overwrite)
    )
    import torch  # after the request's checks: a refused command answers before torch loads
    from tqdm.contrib.logging import logging_redirect_tqdm

    from seq2seq.training.distributed import init_distributed, shutdown, torchrun_info
    from seq2seq.training.setup import claim, make_inputs, make_tokenizers_only
    from seq2seq.training.training_plan import plan_training
    from seq2seq.training.training_run import train as run_training

    with contextlib.ExitStack() as stack:
        info = torchrun_info()
        plan, valid, train_device = plan_training(request, info)
        init_distributed(info, train_device)
        stack.callback(shutdown, info)
        setup_logging(logging.INFO if info.is_main else logging.WARNING)
        if not info.is_main:  # tqdm's logging redirect copies handlers without their levels
            log.setLevel(logging.WARNING)
        claimed = stack.enter_context(claim(plan, info))  # held until the command ends
        if info.is_main:
            setup_logging(logging.INFO, plan.run.log_file)
        if plan.cfg.train.num_threads:
            torch.set_num_threads(plan.cfg.train.num_threads)
        if job.tokenizer_only:
            make_tokenizers_only(claimed, info)
            log.info("tokenizer ready in %s", plan.run.tokenizer_dir)
            return
        inputs = make_inputs(claimed, valid, info)
        with logging_redirect_tqdm([log]):
            progress, interrupted = run_training(plan, inputs, info, train_device)
        if interrupted:
            raise typer.Exit(EXIT_INTERRUPTED)
        log.info(
            "finished at step %d (epoch %d); run directory: %s", progress.step, progress.epoch, plan.run.path
        )


@verb(app)
def prepare(job: PrepareJob) -> None:
    """Tokenize and clean each training corpus once into memory-mapped arrays (training the tokenizer
    first if needed) and print their statistics. `s2s train` reuses them while the data, the
    tokenizer and the rules match."""
    from seq2seq.training.request import prepare_request

    request = prepare_request(job.source.config, list(job.source.overrides), job.overwrite)
    from seq2seq.data.manifest import describe, dropped_report  # after the request's checks
    from seq2seq.data.prepared import read_manifests
    from seq2seq.training.distributed import DistInfo
    from seq2seq.training.setup import claim, prepare_corpus
    from seq2seq.training.training_plan import plan_preparation

    plan = plan_preparation(request, job.figure)
    setup_logging(logging.INFO)
    with claim(plan, DistInfo()) as claimed:
        setup_logging(logging.INFO, plan.run.log_file)
        corpus = prepare_corpus(claimed, job.workers)
    corpora = plan.cfg.data.training_corpora()
    manifests = read_manifests(corpus, corpora)
    print(f"prepared corpus: {corpus}\n{describe(manifests, {c.name: c.weight for c in corpora})}")
    if job.sample:
        print(dropped_report(corpus, corpora, job.sample))
    if job.figure is not None:
        from seq2seq.evaluation.corpus_figure import write_corpus_figure

        write_corpus_figure(manifests, job.figure)
