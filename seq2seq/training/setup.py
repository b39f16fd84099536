"""Before training starts: the run directory locked and checked, the tokenizer and the prepared
corpus ready, the inputs recorded.

Rank 0 does the work, in an order that writes nothing until every check has passed; every rank
then loads the tokenizer (and maps the prepared corpus, in `seq2seq.training.trainer`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from seq2seq.checkpoint import check_can_init, init_source, load_checkpoint
from seq2seq.config import Config, save_config
from seq2seq.data.prepared import ensure_prepared
from seq2seq.data.tokenizer import (
    TokenizerPair,
    copy_tokenizers,
    load_tokenizers,
    prepare_tokenizers,
    tokenizer_checksums,
)
from seq2seq.device import resolve_device
from seq2seq.errors import RunDirError, Seq2SeqError
from seq2seq.rundir import RunDir, check_run_dir, check_same_inputs, data_checksums
from seq2seq.special import CLS_PIECE, SEP_PIECE
from seq2seq.training.distributed import DistInfo, any_rank, local_device_name


def prepare_run(
    cfg: Config,
    run: RunDir,
    info: DistInfo,
    mode: tuple[bool, bool],
    config_file: Path,
    hold: contextlib.ExitStack,
    on_run_dir_ready: Callable[[], None],
    corpus_workers: int | None = 0,
) -> TokenizerPair:
    """Rank 0 locks and checks the run directory and prepares the tokenizer; then every rank loads it.

    Unless `corpus_workers` is None, rank 0 also makes sure the prepared corpus matches the data and
    the tokenizer, encoding it anew with that many processes if not (0: one per core;
    `seq2seq.data.prepared`).
    `mode` is (resume, overwrite). The lock is held until `hold` closes. `on_run_dir_ready` is
    called on rank 0 once the directory may be written to (to start its log).
    A run that already has weights keeps its tokenizer: a missing or changed one is an error, never
    a silent retrain. A failure on rank 0 is shared with the other ranks, so under torchrun they stop
    too instead of waiting for it.
    """
    resume, overwrite = mode
    error: Exception | None = None
    if info.is_main:
        try:
            hold.enter_context(run.locked())  # one trainer per run directory, until the command ends
            init = init_source(cfg) if cfg.train.init_from and not resume else None
            if init is not None:
                check_can_init(init, cfg)
            check_run_dir(run, cfg, resume, overwrite, config_file)
            data = data_checksums(cfg)
            check_run_inputs(cfg, run, resume, data)
            save_config(cfg, run.config_file)  # the first write: every check above has passed
            run.check_writable()
            on_run_dir_ready()
            if init is not None:  # fine-tuning: the weights come with their tokenizer
                copy_tokenizers(init.run.tokenizer_dir, run.tokenizer_dir, cfg.tokenizer.joint)
            prepare_tokenizers(
                cfg.tokenizer,
                list(map(Path, cfg.data.train_src)),
                list(map(Path, cfg.data.train_tgt)),
                run.tokenizer_dir,
                not resume,
                cfg.model.task,
            )
            check_fits_arch(cfg, load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint))
            tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
            run.record_inputs(tokenizer=tokenizer, data=data)
            if corpus_workers is not None:
                ensure_prepared(cfg, run.tokenizer_dir, data, tokenizer, corpus_workers)
        except (Seq2SeqError, OSError) as e:
            error = e
    device = resolve_device(local_device_name(cfg.train.device, info))
    (failed,) = any_rank([error is not None], info, device)
    if error is not None:
        raise error
    if failed:
        raise RunDirError("rank 0 could not prepare the run directory (its error is above)")
    return load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint)


def check_fits_arch(cfg: Config, tokenizers: TokenizerPair) -> None:
    """A decoder-only model needs the <sep> id, a reader the <cls> id and its label set; tokenizers
    trained before these existed lack them."""
    m, src = cfg.model, tokenizers.src
    for needed, has, piece in (
        (m.arch == "decoder_only", src.has_separator, SEP_PIECE),
        (m.arch == "encoder_only", src.has_classifier, CLS_PIECE),
    ):
        if needed and not has:
            raise RunDirError(
                f"model.arch: {m.arch} needs a tokenizer with the {piece} symbol, and {src.path} was "
                "trained without it (by an older s2s): train a new run"
            )
    labels = getattr(tokenizers.tgt, "task", "translate")
    if labels != m.task:
        raise RunDirError(
            f"the run's tokenizer directory is for task {labels}, the config says model.task: {m.task}; "
            "train a new run (--overwrite)"
        )


def check_run_inputs(cfg: Config, run: RunDir, resume: bool, data: dict[str, str]) -> None:
    """The tokenizer and data still are what the run was made from (its weights depend on them).

    On resume the tokenizer must be there, readable and the one the checkpoints were trained with,
    and the training files must not have changed. Before a first training step, a tokenizer left by
    an earlier `--tokenizer-only` must be the one that stage made.
    """
    recorded = run.read_inputs()
    if resume:
        load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint)  # missing or corrupt: a clear error
        last = load_checkpoint(run.checkpoint_path("last"), mmap=True)  # Trainer.resume reads the tensors
        tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
        check_same_inputs("tokenizer", last.get("tokenizer_sha256", {}), tokenizer, "the run's checkpoints")
        train_data = {k: v for k, v in recorded.get("data", {}).items() if k.startswith("train_")}
        check_same_inputs("training data", train_data, data, "the start of the run")
    else:
        tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
        check_same_inputs("tokenizer", recorded.get("tokenizer", {}), tokenizer, "the tokenizer stage")
