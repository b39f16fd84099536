"""The training loop: token batches -> label-smoothed loss -> AdamW steps, validation, checkpoints.

The trainer meets the model only through `TrainingLoss`: (src, tgt_in, tgt_out) -> summed loss.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from seq2seq.checkpoint import (
    check_fits_run,
    checkpoint_inputs,
    inference_weights,
    init_source,
    load_checkpoint,
    save_training_state,
)
from seq2seq.config import Config
from seq2seq.data.parallel import Batch, ParallelData, load_eval_pairs
from seq2seq.data.prepared import describe, load_prepared, prepared_dir, read_manifest
from seq2seq.data.tokenizer import TokenizerPair, tokenizer_checksums
from seq2seq.device import autocast, autocast_dtype, faster_cpu_dtype, grad_scaler, resolve_device
from seq2seq.errors import TrainingDiverged
from seq2seq.models.build import Model, build_model
from seq2seq.models.encoder_decoder import count_parameters
from seq2seq.rundir import RunDir
from seq2seq.training.distributed import (
    DistInfo,
    all_reduce_sum,
    any_rank,
    barrier,
    broadcast_from_main,
    local_device_name,
)
from seq2seq.training.interrupt import StopRequest
from seq2seq.training.log import TrainLog
from seq2seq.training.loss import TrainingLoss
from seq2seq.training.optim import WeightAverage, build_optimizer, build_scheduler
from seq2seq.training.order import BatchOrder
from seq2seq.training.rngstate import gather_rng_states, set_rng_state
from seq2seq.training.throughput import ThroughputMeter
from seq2seq.training.validation import ValidResult, ValidSet, validate

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint so a resumed run continues exactly."""

    step: int = 0
    epoch: int = 0
    next_batch: int = 0  # index of the next batch in this rank's order for `epoch`
    best: float | None = None  # best validation score so far (lower is better; BLEU is negated)
    bad_validations: int = 0  # validations in a row without improvement
    interval_loss: float = 0.0  # label-smoothed loss summed since the last log line
    interval_tokens: int = 0
    train_seconds: float = 0.0  # wall-clock time spent training (train.max_minutes)
    best_metric: str = ""  # what `best` measures
    inference: str = "raw"  # weights that validated better last time: "raw", or "ema" (the average)
    precision: str = ""  # what `precision: auto` measured on a CPU at the start of the run
    batching: str = ""  # what this epoch's batch order was made for (`BatchOrder.describe`)


class Trainer:
    """One training run: set-up, one optimizer step, the loop, validation and checkpoint state.

    What it delegates: the order of the batches (`BatchOrder`), what is logged and recorded
    (`TrainLog`), the loss (`TrainingLoss`), validation itself (`validate`), writing checkpoints
    (`save_training_state`) and random-state bookkeeping (`seq2seq.training.rngstate`).
    """

    def __init__(
        self,
        cfg: Config,
        run: RunDir,
        model: Model,
        tokenizers: TokenizerPair,
        train_data: ParallelData,
        valid: ValidSet,
        info: DistInfo,
        device_name: str,
    ) -> None:
        self.cfg, self.tcfg, self.run, self.info = cfg, cfg.train, run, info
        self.device = resolve_device(device_name)
        self.dtype = autocast_dtype(self.device, self.tcfg.precision)  # `auto` on a CPU: see fit()
        self.model = model.to(self.device)
        self.objective = TrainingLoss(self.model, self.tcfg.label_smoothing)  # what DDP/compile wrap
        self.net: nn.Module = self.objective
        if info.enabled:
            self.net = DistributedDataParallel(
                self.net, device_ids=[self.device.index] if self.device.type == "cuda" else None
            )
        if self.tcfg.compile:
            self.net = torch.compile(self.net, dynamic=True)
        self.tokenizers, self.data, self.valid = tokenizers, train_data, valid
        self.optimizer = build_optimizer(self.model, self.tcfg)
        self.scheduler = build_scheduler(self.optimizer, self.tcfg)
        self.scaler = grad_scaler(self.device, self.dtype)
        self.ema = WeightAverage(self.model, self.tcfg.ema_decay) if self.tcfg.ema_decay > 0 else None
        self.order = BatchOrder(train_data.costs(), self.tcfg, info)
        self.records = TrainLog(run, self.tcfg, info, self.device)
        self.progress = Progress(best_metric=self.tcfg.best_metric, batching=self.order.describe())
        self._loss_acc = torch.zeros((), device=self.device)  # interval loss not yet moved to `progress`
        self.step_lr = self.optimizer.param_groups[0]["lr"]
        # config and tokenizer checksums, the same in every checkpoint of the run
        self.origin = checkpoint_inputs(cfg, run.read_inputs().get("tokenizer", {}))
        self.stop = StopRequest()
        torch.manual_seed(self.tcfg.seed + info.rank)

    def _choose_cpu_precision(self) -> None:
        """`precision: auto` on a CPU: bf16 only if a timed probe of this model says it is faster.

        Rank 0 measures and every rank follows it; a resumed run keeps the choice it started with.
        """
        p = self.progress
        if not p.precision:
            bf16 = 0.0
            if self.info.is_main:
                dtype, reason = faster_cpu_dtype(self._probe_step)
                log.info("precision auto on this CPU: %s", reason)
                bf16 = float(dtype is torch.bfloat16)
            p.precision = "bf16" if broadcast_from_main(bf16, self.info, self.device) else "fp32"
        self.dtype = torch.bfloat16 if p.precision == "bf16" else None

    def _probe_step(self, dtype: torch.dtype | None) -> None:
        """One forward and backward pass of this model on a batch of its own batch size.

        The batch is the first training examples (in the layout of the run's task), as many as
        32-token examples would fill. Leaves no trace: the RNG (dropout, data order) is restored and
        the gradients are dropped.
        """
        rows = max(min(self.tcfg.max_tokens, 2048) // 32, 1)
        batch = self.data.batch(np.arange(min(rows, len(self.data)))).to(self.device)
        with torch.random.fork_rng(devices=[]), autocast(self.device, dtype):  # unwrapped: rank 0 alone
            self.objective(batch.src, batch.tgt_in, batch.tgt_out).backward()
        self.model.zero_grad(set_to_none=True)

    # ---- one optimizer step -----------------------------------------------------------------------

    def train_step(self, batches: list[Batch]) -> torch.Tensor:
        """Accumulate gradients over `batches`, then take one optimizer step.

        The loss is normalized by the real target tokens of all batches on all ranks, so the update is
        the same however the work is split. Returns the summed label-smoothed loss (a 0-dim tensor).
        """
        local_tokens = sum(b.num_tgt_tokens for b in batches)
        total_tokens = all_reduce_sum(local_tokens, self.info, self.device)
        loss_sum = torch.zeros((), device=self.device)
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = i == len(batches) - 1
            sync = contextlib.nullcontext() if last or not self.info.enabled else self.net.no_sync()
            with sync:
                with autocast(self.device, self.dtype):
                    loss = self.net(batch.src, batch.tgt_in, batch.tgt_out)
                self.scaler.scale(loss * (self.info.world / total_tokens)).backward()
            loss_sum += loss.detach()
        self.scaler.unscale_(self.optimizer)
        if self.tcfg.clip_norm > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.tcfg.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.step_lr = self.optimizer.param_groups[0]["lr"]  # what this step used, for the log
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.update(self.model)
        return loss_sum

    # ---- the loop ---------------------------------------------------------------------------------

    def fit(self) -> Progress:
        """Train until max steps, max epochs, patience, or Ctrl-C; always leaves a resumable last.pt."""
        t, p = self.tcfg, self.progress
        bar = tqdm(
            total=t.max_steps or None,
            initial=p.step,
            disable=not (self.info.is_main and sys.stderr.isatty()),
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=1.0,
            desc="train",
        )
        if self.tcfg.precision == "auto" and self.device.type == "cpu":
            self._choose_cpu_precision()
        self.records.effective_batch(len(self.order.batches(p.epoch)))
        meter = ThroughputMeter()
        validated_at = -1
        clock = time.perf_counter() - p.train_seconds
        with self.stop.installed():
            while not self._finished():
                group = [self.data.batch(indices) for indices in self.order.next_group(p)]
                if self.device.type == "cuda":
                    group = [b.pin_memory() for b in group]
                meter.add(group)
                self._loss_acc += self.train_step(group)
                p.step += 1
                p.interval_tokens += sum(b.num_tgt_tokens for b in group)
                bar.update(1)
                if p.step % t.log_every == 0:
                    self._log_interval(bar, meter)
                if p.step % t.valid_every == 0:
                    self._validate_and_save()
                    validated_at = p.step
                p.train_seconds = time.perf_counter() - clock
                out_of_time = bool(t.max_minutes) and p.train_seconds >= 60 * t.max_minutes
                interrupted, out_of_time = any_rank(
                    [self.stop.requested, out_of_time], self.info, self.device
                )
                if interrupted or out_of_time:
                    self.stop.requested = interrupted  # on every rank, so all save together
                    if out_of_time:
                        log.info("train.max_minutes (%g) reached at step %d", t.max_minutes, p.step)
                    break
            bar.close()
            if self.stop.requested:
                self._save(is_best=False, numbered=False)
                log.warning("stopped at step %d; continue with: s2s train CONFIG --resume", p.step)
            elif validated_at != p.step:
                self._validate_and_save()
        return p

    def _finished(self) -> bool:
        t, p = self.tcfg, self.progress
        if t.max_steps and p.step >= t.max_steps:
            return True
        if t.max_epochs and p.epoch >= t.max_epochs:
            return True
        if t.patience and p.bad_validations >= t.patience:
            log.info("no improvement in %d validations: stopping early", p.bad_validations)
            return True
        return False

    def _flush_loss(self) -> None:
        """Move the on-device loss sum into `progress` (one host sync, only when logging or saving)."""
        self.progress.interval_loss += float(self._loss_acc)
        self._loss_acc.zero_()

    def _log_interval(self, bar: tqdm, meter: ThroughputMeter) -> None:
        p = self.progress
        self._flush_loss()
        loss = self.records.interval_loss(p.interval_loss, p.interval_tokens)
        self._check_finite(loss)
        self.records.interval(p.step, p.epoch, loss, self.step_lr, meter, bar)
        p.interval_loss, p.interval_tokens = 0.0, 0

    def _validate_and_save(self) -> None:
        """Rank 0 validates and saves; the decision to stop early is shared with every rank.

        With a weight average, both the raw and the averaged weights are validated; the better one
        counts for `best.pt` and patience, and is the one translation uses (`progress.inference`).
        """
        p = self.progress
        improved = False
        if self.info.is_main:
            results = {"raw": self._validate(self.model)}
            if self.ema is not None:
                results["ema"] = self._validate(self._averaged_model())
            p.inference = min(results, key=lambda weights: self._score(results[weights]))
            score = self._score(results[p.inference])
            improved = p.best is None or score < p.best
            p.best = score if improved else p.best
            p.bad_validations = 0 if improved else p.bad_validations + 1
            self.records.validation(p.step, p.epoch, p.inference, results, improved)
        p.bad_validations = int(broadcast_from_main(p.bad_validations, self.info, self.device))
        self._save(is_best=improved)

    def _validate(self, model: Model) -> ValidResult:
        return validate(
            model, self.valid, self.tokenizers, self.tcfg, self.cfg.decode, self.device, self.dtype
        )

    def _score(self, result: ValidResult) -> float:
        """Lower is better: the loss, or the negated BLEU or accuracy."""
        if self.tcfg.best_metric == "loss":
            return result.loss
        return -(result.bleu if self.tcfg.best_metric == "bleu" else result.accuracy)

    def _averaged_model(self) -> Model:
        """A copy of the model holding the moving-average weights."""
        model = copy.deepcopy(self.model)
        model.load_state_dict(self.ema.model_state(self.model))
        return model

    def _check_finite(self, loss: float) -> None:
        """Stop the run, saving nothing, once the loss or the weights are no longer finite numbers.

        `loss` is summed over every rank (and the weights are the same on every rank), so all ranks
        stop together. The check runs where the loss reaches the host anyway: at each log line and
        before each checkpoint, so a diverged state is never saved.
        """
        p = self.progress
        weights_ok = bool(torch.stack([w.isfinite().all() for w in self.model.parameters()]).all())
        if math.isfinite(loss) and weights_ok:
            return
        what = f"the training loss is {loss}" if not math.isfinite(loss) else "the weights hold NaN or inf"
        raise TrainingDiverged(
            f"training diverged: {what} at step {p.step} (within the last {self.tcfg.log_every} steps); "
            "nothing was saved after the last checkpoint. Lower train.lr "
            f"(now {self.tcfg.lr:g}), raise train.warmup_steps or check the data, then continue from "
            "the last checkpoint with --resume or start over with --overwrite"
        )

    # ---- checkpoints ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        self._flush_loss()
        p = self.progress
        if self.info.enabled:
            # the saved interval sums cover all ranks; rank 0 carries them from here on
            p.interval_loss = all_reduce_sum(p.interval_loss, self.info, self.device)
            p.interval_tokens = int(all_reduce_sum(p.interval_tokens, self.info, self.device))
        self._check_finite(p.interval_loss)
        if self.info.enabled and not self.info.is_main:
            p.interval_loss, p.interval_tokens = 0.0, 0
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "progress": dataclasses.asdict(self.progress),
            "rng": gather_rng_states(self.info, self.device),
            "world": self.info.world,
            **self.origin,
        }
        if self.ema is not None:
            state["ema"] = self.ema.model_state(self.model)
            state["ema_updates"] = self.ema.updates
        state["inference"] = "ema" if self.ema is not None and self.progress.inference == "ema" else "model"
        return state

    def _save(self, is_best: bool, numbered: bool = True) -> None:
        """Checkpoint (rank 0 writes); an interrupt writes only last.pt, not a numbered checkpoint."""
        state = self.state_dict()
        if self.info.is_main:
            keep = self.tcfg.keep_checkpoints
            weights_only = self.tcfg.keep_optimizer == "last"
            save_training_state(self.run, state, self.progress.step, keep, is_best, numbered, weights_only)
        barrier(self.info)

    def resume(self) -> None:
        """Continue from `last.pt`: weights, optimizer, schedule, scaler, data position and RNG."""
        state = load_checkpoint(self.run.checkpoint_path("last"), self.device)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        if self.ema is not None and "ema" in state:
            self.ema.load_state_dict({"weights": state["ema"], "updates": state.get("ema_updates", 0)})
        elif self.ema is not None:  # averaging was just switched on: start from the loaded weights
            self.ema = WeightAverage(self.model, self.tcfg.ema_decay)
        self._apply_train_config()
        self.progress = p = Progress(**state["progress"])
        if not self.info.is_main:  # rank 0 carries the interval sums of all ranks
            p.interval_loss, p.interval_tokens = 0.0, 0
        if p.best_metric != self.tcfg.best_metric:
            p.best, p.bad_validations, p.best_metric = None, 0, self.tcfg.best_metric
        if state["world"] == self.info.world:
            set_rng_state(state["rng"][self.info.rank].cpu(), self.device)
        else:
            torch.manual_seed(self.tcfg.seed + self.info.rank + p.step)
        if p.batching != self.order.describe() and p.next_batch:
            log.warning(
                "the batches of epoch %d were made for %s, now %s: the rest of that epoch cannot be "
                "split the same way, so training continues at the start of epoch %d",
                p.epoch,
                p.batching,
                self.order.describe(),
                p.epoch + 1,
            )
            p.epoch, p.next_batch = p.epoch + 1, 0
        p.batching = self.order.describe()
        if self.info.is_main:
            self.run.truncate_metrics(p.step)
        log.info("resumed from step %d (epoch %d)", p.step, p.epoch)

    def _apply_train_config(self) -> None:
        """A resumed run follows the config's peak lr and weight decay, not the checkpoint's."""
        self.scheduler.base_lrs = [self.tcfg.lr for _ in self.optimizer.param_groups]
        for group, factor in zip(self.optimizer.param_groups, self.scheduler.lr_lambdas):
            lr = self.tcfg.lr * factor(self.scheduler.last_epoch)
            group.update(lr=lr, initial_lr=self.tcfg.lr, weight_decay=self.tcfg.weight_decay)


def initialize_from(model: Model, cfg: Config, run: RunDir) -> None:
    """Fine-tuning: the weights of `train.init_from` (with the tokenizer they were trained with)."""
    path = init_source(cfg).checkpoint
    state = load_checkpoint(path)
    check_fits_run(state, path, cfg, tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint))
    model.load_state_dict(inference_weights(state))
    log.info(
        "initialized from %s (step %s); optimizer, schedule and data order start afresh",
        path,
        state.get("progress", {}).get("step", "?"),
    )


def train(
    cfg: Config, run: RunDir, tokenizers: TokenizerPair, info: DistInfo, resume: bool
) -> tuple[Progress, bool]:
    """Load the data, build the model and train it; `resume` continues from the run's last.pt.

    Returns where training ended and whether it was interrupted (Ctrl-C) rather than finished.
    """
    d = cfg.data
    corpus = prepared_dir(cfg)
    train_data = load_prepared(corpus)
    log.info("training corpus, memory-mapped from %s:\n%s", corpus, describe(read_manifest(corpus)))
    valid_data, src_lines, ref_lines = load_eval_pairs(tokenizers, d.valid_src, d.valid_tgt, d.max_len)
    torch.manual_seed(cfg.train.seed)  # the same initial weights on every rank and every run
    model = build_model(
        cfg.model, tokenizers.src.vocab_size, tokenizers.tgt.vocab_size, tokenizers.src.word_starts()
    )
    if cfg.train.init_from and not resume:
        initialize_from(model, cfg, run)
    log.info(
        "model: %s parameters, vocabulary %d/%d",
        f"{count_parameters(model):,}",
        tokenizers.src.vocab_size,
        tokenizers.tgt.vocab_size,
    )
    device_name = local_device_name(cfg.train.device, info)
    trainer = Trainer(
        cfg, run, model, tokenizers, train_data, ValidSet(valid_data, src_lines, ref_lines), info, device_name
    )
    if resume:
        trainer.resume()
    try:
        return trainer.fit(), trainer.stop.requested
    finally:
        trainer.records.close()
