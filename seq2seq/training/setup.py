"""Before training starts: the run directory claimed, then the run's inputs made, each check once.

    plan (`seq2seq.training.training_plan`) -> claim (lock, check, save the config) -> make the inputs
    (tokenizers, the prepared corpus, checksums, validation pairs, fine-tuning weights) -> `RunInputs`

Rank 0 claims and makes the inputs, in an order that writes nothing until every check of the claim has passed,
including the training text (`check_training_text`); a failure there is shared with the other ranks, so
under torchrun they stop too instead of waiting for it. Every rank then loads what rank 0 made.

What can only fail later (the tokenizer refusing the text, every pair filtered out, a validation line
the tokenizer splits otherwise, Ctrl-C, a crash) is undone: the claim's writes happen inside
`changing` (`seq2seq.run.change`), so until a new run has its first checkpoint (a resumed one: until
the set-up is done), a failure puts the run directory back as it was, `--overwrite`'s previous run
included. A command killed on the way is settled by the next one (`recover`). Only rank 0 touches the
run directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.checkpoint import RESUME_ONLY, check_fits_run, load_checkpoint
from seq2seq.config import Config, config_differences, config_to_dict, save_config
from seq2seq.config.data import language_token
from seq2seq.config.schema import is_training_file
from seq2seq.data.control import source_prefix
from seq2seq.data.corpora import pair_chunks
from seq2seq.data.parallel import encode_eval_pairs
from seq2seq.data.prepared import corpus_mixture, ensure_prepared_corpus, prepared_corpus_dir, read_manifests
from seq2seq.data.targets import TARGETS
from seq2seq.data.tokenizer import (
    TokenizerPair,
    copy_tokenizers,
    load_tokenizers,
    tokenizer_checksums,
    train_or_load_tokenizers,
)
from seq2seq.errors import DataError, RunDirError, Seq2SeqError
from seq2seq.models.family import model_family
from seq2seq.run.change import RunChange, changing, recover
from seq2seq.run.checks import check_run_dir, check_same_inputs, data_checksums
from seq2seq.run.layout import RunDir
from seq2seq.run.lock import locked
from seq2seq.training.distributed import DistInfo, any_rank
from seq2seq.training.training_plan import RunPlan, ValidText
from seq2seq.training.validation import VALID_SCORES, ValidSet


@dataclass(frozen=True)
class Claim:
    """A run directory held for one command, checked against its plan, its config saved."""

    plan: RunPlan
    data_sums: dict[str, str]  # sha256 of each data file, by rank 0 (the other ranks never read them)
    tokenizer_sums: dict[str, str]  # of the tokenizer files the claim checked, by rank 0; {} if none
    change: RunChange | None  # what rank 0 changes in the run, undone if the set-up fails (None: rank > 0)

    def setup_done(self) -> None:
        """Rank 0: the set-up path has finished (`RunChange.setup_done`)."""
        if self.change is not None:
            self.change.setup_done()


@dataclass(frozen=True)
class InitWeights:
    """Fine-tuning: the checkpoint to start from, read and checked against the run."""

    path: Path
    state: dict[str, Any]
    layers: dict[str, tuple[int, ...]]  # which of its layers start a smaller model's (shrink.py)


@dataclass(frozen=True)
class RunInputs:
    """Everything training reads besides the config, made or checked once."""

    tokenizers: TokenizerPair
    tokenizer_sums: dict[str, str]  # sha256 of each tokenizer file, as recorded in inputs.json
    corpus_dir: Path  # the prepared (memory-mapped) training corpus
    valid: list[ValidSet]  # one per direction of a multilingual run
    init: InitWeights | None  # fine-tuning (train.init_from, not on resume)


@contextlib.contextmanager
def claim(plan: RunPlan, info: DistInfo) -> Iterator[Claim]:
    """Hold the run directory until the command ends: rank 0 locks it, checks it, saves the config.

    A refused claim writes nothing. Its writes, and the command's after them, are undone if the
    command fails before its run has started (`changing`): `--overwrite` sets the old run aside
    and deletes it only then.
    """
    with contextlib.ExitStack() as held:
        claimed = Claim(plan, {}, {}, None)
        with shared_failure(info):
            if info.is_main:
                held.enter_context(locked(plan.run))  # one trainer per run directory
                claimed = _check_and_save(plan, held)
        yield claimed


def _check_and_save(plan: RunPlan, held: contextlib.ExitStack) -> Claim:
    """The claim's checks, then its writes (the config first), undone if the command fails early."""
    cfg, run = plan.cfg, plan.run
    recover(run)  # what a command killed here left half done, settled before anything is checked
    check_run_dir(run, cfg, plan.mode, plan.config_file)
    if plan.mode != "resume":  # a resumed run's text is the one its start checked (compared below)
        check_training_text(cfg)
    data = data_checksums(cfg)
    tokenizer: dict[str, str] = {}
    if plan.mode != "overwrite":
        tokenizer = check_run_inputs(cfg, run, plan.mode == "resume", data)
    run.check_writable()
    change = held.enter_context(changing(run, plan.mode))  # --overwrite: the old run is set aside
    save_config(cfg, run.config_file)  # the first write: every check above has passed
    return Claim(plan, data, tokenizer, change)


def check_training_text(cfg: Config) -> None:
    """What tokenizing the training files would find only after the run was changed, found now: each
    file is UTF-8 text to its end (no NUL byte, bounded lines), and some pair has text on both sides.

    One decoding pass over each file (rank 0); the search for a pair with text stops at the first.
    """
    corpora = cfg.data.training_corpora()
    has_text = False
    for corpus in corpora:  # every line decoded (a TSV line's tab counted), naming the first bad one
        for src, tgt in pair_chunks(corpus):
            has_text = has_text or any(s.strip() and t.strip() for s, t in zip(src, tgt, strict=True))
    if not has_text:
        files = ", ".join(path for corpus in corpora for path in corpus.files().values())
        raise DataError(f"{files}: no training pair with text on both sides")


def make_inputs(claim: Claim, valid: list[ValidText], info: DistInfo) -> RunInputs:
    """`s2s train`: rank 0 makes the tokenizer and the prepared corpus; every rank loads the inputs."""
    with shared_failure(info):
        if info.is_main:
            _prepare_corpus(claim, _make_tokenizers(claim), workers=0)
    inputs = _load_inputs(claim.plan, valid)
    claim.setup_done()
    return inputs


def make_tokenizers_only(claim: Claim, info: DistInfo) -> TokenizerPair:
    """`s2s train --tokenizer-only`: rank 0 makes the tokenizer; every rank loads it."""
    with shared_failure(info):
        if info.is_main:
            _make_tokenizers(claim)
    tokenizers = load_tokenizers(claim.plan.run.tokenizer_dir, claim.plan.cfg.tokenizer.joint)
    claim.setup_done()
    return tokenizers


def prepare_corpus(claim: Claim, workers: int) -> Path:
    """`s2s prepare` (one process): the tokenizer and the prepared corpus; returns the corpus directory.

    `workers` encoding processes (0: one per core; `seq2seq.data.prepared`).
    """
    with shared_failure(DistInfo()):
        _prepare_corpus(claim, _make_tokenizers(claim), workers)
    claim.setup_done()
    return prepared_corpus_dir(claim.plan.cfg)


def _make_tokenizers(claim: Claim) -> dict[str, str]:
    """Rank 0: copy (fine-tuning), train or load the tokenizers, record their checksums and the data's.

    A run that already has weights keeps its tokenizer: a missing one is an error, never a silent
    retrain. Returns the tokenizer checksums.
    """
    plan = claim.plan
    cfg, run = plan.cfg, plan.run
    if plan.init is not None:  # fine-tuning: the weights come with their tokenizer
        copy_tokenizers(plan.init.run.tokenizer_dir, run.tokenizer_dir, cfg.tokenizer.joint)
    elif cfg.train.tokenizer_from and plan.mode != "resume":  # another run's, shared
        copy_tokenizers(
            RunDir(cfg.train.tokenizer_from).tokenizer_dir, run.tokenizer_dir, cfg.tokenizer.joint
        )
    train_or_load_tokenizers(
        cfg.tokenizer,
        cfg.data.training_corpora(),
        run.tokenizer_dir,
        plan.mode != "resume",
        TARGETS[cfg.model.task],
    )
    check_fits_arch(cfg, load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint))
    tokenizer = claim.tokenizer_sums
    if plan.mode != "resume":  # a resumed run's tokenizer is the one the claim checked: nothing remade it
        tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
    run.record_inputs(tokenizer=tokenizer, data=claim.data_sums)
    return tokenizer


def _prepare_corpus(claim: Claim, tokenizer_sums: dict[str, str], workers: int) -> None:
    """Rank 0: the prepared corpus matches the data and the tokenizer, encoded anew if not."""
    cfg = claim.plan.cfg
    ensure_prepared_corpus(cfg, claim.plan.run.tokenizer_dir, claim.data_sums, tokenizer_sums, workers)
    corpora = cfg.data.training_corpora()  # what the weights draw, known once the sizes are
    corpus_mixture(read_manifests(prepared_corpus_dir(cfg), corpora), corpora, cfg.data.temperature)


def _load_inputs(plan: RunPlan, valid: list[ValidText]) -> RunInputs:
    """Every rank: the tokenizers rank 0 made, the validation pairs and the fine-tuning weights."""
    cfg, run = plan.cfg, plan.run
    tokenizers = load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint, cfg.model.right_to_left)
    sums = run.read_inputs().get("tokenizer", {})  # rank 0 has just recorded them
    sets = []
    for text in valid:
        prefix = source_prefix(tokenizers.src, language_token(text.tgt_lang) if text.tgt_lang else "")
        pairs = encode_eval_pairs(
            tokenizers, text.src, text.tgt, cfg.data.max_len, text.src_path, text.tgt_path, prefix
        )
        sets.append(ValidSet(pairs, text.src, text.tgt, text.direction, VALID_SCORES[cfg.model.task]))
    init = None
    if plan.init is not None:
        state = load_checkpoint(plan.init.checkpoint)
        shrunk = [f"model.{key}" for key in plan.init.layers]
        check_fits_run(state, plan.init.checkpoint, cfg, sums, may_differ=shrunk)
        init = InitWeights(plan.init.checkpoint, state, plan.init.layers)
    return RunInputs(tokenizers, sums, prepared_corpus_dir(cfg), sets, init)


@contextlib.contextmanager
def shared_failure(info: DistInfo) -> Iterator[None]:
    """A user error raised in the block (by rank 0) is raised on every rank, after they all agree."""
    error: Exception | None = None
    try:
        yield
    except (Seq2SeqError, OSError) as e:
        error = e
    (failed,) = any_rank([error is not None], info, patient=True)  # rank 0 may take hours
    if error is not None:
        raise error
    if failed:
        raise RunDirError("rank 0 could not prepare the run directory (its error is above)")


def check_fits_arch(cfg: Config, tokenizers: TokenizerPair) -> None:
    """The model's family may need a control symbol (a decoder-only model <sep>, a reader <cls>),
    which tokenizers trained before it existed lack; a reader needs the label set of its task."""
    m, family, src = cfg.model, model_family(cfg.model), tokenizers.src
    if family.control is not None and not src.has_control(*family.control):
        raise RunDirError(
            f"model.arch: {family.name} needs a tokenizer with the {family.control[0]} symbol, and "
            f"{src.path} was trained without it (by an older s2s): train a new run"
        )
    if tokenizers.targets.task != m.task:
        raise RunDirError(
            f"the run's tokenizer directory is for task {tokenizers.targets.task}, the config says "
            f"model.task: {m.task}; "
            "train a new run (--overwrite)"
        )


def check_run_inputs(cfg: Config, run: RunDir, resume: bool, data: dict[str, str]) -> dict[str, str]:
    """The tokenizer and data still are what the run was made from (its weights depend on them).

    On resume the tokenizer must be there, readable and the one the checkpoints were trained with,
    and the training files must not have changed. Before a first training step, a tokenizer left by
    an earlier `--tokenizer-only` must be the one that stage made. Returns the checksums of the
    tokenizer files it checked ({} when there was no tokenizer to check).
    """
    recorded = run.read_inputs()
    tokenizer: dict[str, str] = {}
    if resume:
        load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint)  # missing or corrupt: a clear error
        path = run.checkpoint_path("last")
        last = load_checkpoint(path, mmap=True)  # Trainer.resume reads the tensors
        tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
        check_fits_run(last, path, cfg, tokenizer)  # what it records of its model and tokenizer
        check_same_adapters(last, path, cfg)
        if missing := [key for key in (*RESUME_ONLY, "progress") if key not in last]:
            raise RunDirError(
                f"{path} holds no {', '.join(missing)}: it is weights only, not a state training can "
                "continue from; start a new run from it with train.init_from"
            )
        if not isinstance(recorded.get("data"), dict):
            raise RunDirError(
                f"{run.inputs_file} is missing or records no sha256 of the training data, so the run "
                "cannot be checked before it continues: restore it, or start over with --overwrite"
            )
        train_data = {k: v for k, v in recorded["data"].items() if is_training_file(k)}
        check_same_inputs("training data", train_data, data, "the start of the run")
    elif stage := recorded.get("tokenizer", {}):  # an earlier `--tokenizer-only` recorded its tokenizer
        tokenizer = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
        check_same_inputs("tokenizer", stage, tokenizer, "the tokenizer stage")
    return tokenizer


def check_same_adapters(last: dict[str, Any], path: Path, cfg: Config) -> None:
    """A resumed run trains what it trained: train.lora may not change (nor be switched on or off), for
    last.pt holds either every weight or the adapters train.lora described."""
    recorded = last.get("config", {})
    changed = [
        f"{key}: {old!r} in {path}, {new!r} now"
        for key, old, new in config_differences(recorded, config_to_dict(cfg), ("train",))
        if key == "train.lora"
    ]
    if changed:
        raise RunDirError(
            "train.lora cannot change when a run resumes (its checkpoints hold what it trained):\n  "
            + "\n  ".join(changed)
            + "\nput the run's setting back, or start a new run with train.init_from"
        )
