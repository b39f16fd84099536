"""The training loop: token batches -> label-smoothed loss -> AdamW steps, validation, checkpoints.

The trainer meets the model only through its objective (`training_objective`): (src, tgt_in, tgt_out,
links) -> the summed loss and guided-alignment cost. What a checkpoint holds and how a resumed run
takes it back is `seq2seq.training.state`'s; the CPU's `precision: auto` choice is
`seq2seq.training.precision`'s.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from collections.abc import Callable

import torch
from torch import nn
from tqdm import tqdm

from seq2seq.checkpoint import checkpoint_inputs, load_checkpoint, save_training_state
from seq2seq.config import Config
from seq2seq.data.augmented import Augmenter
from seq2seq.data.mixing import Mixture
from seq2seq.data.parallel import Batch, JoinedCorpus, ParallelData
from seq2seq.data.tokenizer import TokenizerPair
from seq2seq.device import autocast, autocast_dtype, prefer_safe_attention_kernels
from seq2seq.models.build import Model
from seq2seq.run.finished import Ending
from seq2seq.run.layout import RunDir
from seq2seq.training.adapters import Adapters
from seq2seq.training.distributed import (
    DistInfo,
    all_reduce_max,
    all_reduce_sum,
    any_rank,
    barrier,
    broadcast_from_main,
    data_parallel,
)
from seq2seq.training.divergence import check_finite
from seq2seq.training.interrupt import StopRequest
from seq2seq.training.log import TrainLog
from seq2seq.training.loss import training_objective
from seq2seq.training.optim import WeightAverage
from seq2seq.training.order import BatchOrder
from seq2seq.training.precision import choose_cpu_precision
from seq2seq.training.shapes import compiled, uses_cuda_graphs
from seq2seq.training.state import Progress, TrainingState
from seq2seq.training.throughput import ThroughputMeter
from seq2seq.training.validation import ValidResult, ValidSet, validate_sets

log = logging.getLogger(__name__)


class Trainer:
    """One training run: set-up, one optimizer step, the loop, validation and saving checkpoints.

    What it delegates: the order of the batches (`BatchOrder`), what is logged and recorded
    (`TrainLog`), the loss (`TrainingLoss`), validation itself (`validate`), what a checkpoint holds
    (`TrainingState`), writing checkpoints (`save_training_state`) and the CPU's precision choice.
    """

    def __init__(
        self,
        cfg: Config,
        run: RunDir,
        model: Model,
        tokenizers: TokenizerPair,
        tokenizer_sums: dict[str, str],
        train_data: ParallelData | JoinedCorpus,
        valid: list[ValidSet],
        info: DistInfo,
        device: torch.device,
        mixture: Mixture | None = None,
        augment: Augmenter | None = None,
        adapters: Adapters | None = None,
    ) -> None:
        """`tokenizer_sums`: the sha256 of each tokenizer file (`RunInputs`), recorded in each checkpoint;
        `device`: where this process trains (`training_device`); `mixture`: what each epoch draws from
        the corpora of `train_data` (None: every pair once); `augment`: which of them it modifies;
        `adapters`: what `adapt` added to `model` (train.lora), which then trains them alone."""
        self.cfg, self.tcfg, self.run, self.info, self.device = cfg, cfg.train, run, info, device
        self.dtype = autocast_dtype(self.device, self.tcfg.precision)  # `auto` on a CPU: see fit()
        if self.device.type == "cuda":
            prefer_safe_attention_kernels()
        self.model = model.to(self.device)
        self.objective = training_objective(self.model, self.tcfg)  # what DDP/compile wrap
        self.ddp = data_parallel(self.objective, self.device) if info.enabled else None
        net: nn.Module = self.objective if self.ddp is None else self.ddp
        self.net: Callable[..., torch.Tensor] = compiled(net, self.tcfg, self.device, info.enabled)
        self.graphs = uses_cuda_graphs(self.tcfg, self.device, info.enabled)  # each step: a new replay
        self.tokenizers, self.data, self.valid = tokenizers, train_data, valid
        costs, targets = train_data.costs(), train_data.target_tokens()
        self.order = BatchOrder(costs, targets, self.tcfg, info, mixture, augment)
        batching = self.order.describe()
        self.state = TrainingState.start(self.model, self.tcfg, self.device, self.dtype, batching, adapters)
        self.records = TrainLog(run, self.tcfg, info)
        # the interval's loss, alignment cost, tokens and skipped steps, on the device until a log line
        # or checkpoint
        self._interval = torch.zeros(4, dtype=torch.float64, device=self.device)
        self.skipped: torch.Tensor | None = None  # whether the fp16 loss scaler skipped the last step
        self.step_lr = self.state.optimizer.param_groups[0]["lr"]
        self.origin = checkpoint_inputs(cfg, tokenizer_sums)  # the same in every checkpoint of the run
        self.stop = StopRequest()
        self.ending: Ending | None = None  # the limit that ended `fit` (None: interrupted, or not yet)
        torch.manual_seed(self.tcfg.seed + info.rank)

    @property
    def progress(self) -> Progress:
        """Where training stands (held by `self.state`, whose `restore` replaces it on resume)."""
        return self.state.progress

    # ---- one optimizer step -----------------------------------------------------------------------

    def train_step(self, batches: list[Batch], total_tokens: int | None = None) -> torch.Tensor:
        """Accumulate gradients over `batches`, then take one optimizer step.

        The loss is normalized by `total_tokens`, the real target tokens of the step's batches on all
        ranks (`BatchOrder.next_step` knows it without asking them; by default this process's), so the
        update is the same however the work is split. Returns the summed label-smoothed loss and
        guided-alignment cost (2,) (0 without guidance). Nothing here waits for the device.
        """
        s = self.state
        if total_tokens is None:
            total_tokens = sum(b.num_tgt_tokens for b in batches)
        loss_sum = torch.zeros(2, device=self.device)
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = i == len(batches) - 1
            sync = contextlib.nullcontext() if last or self.ddp is None else self.ddp.no_sync()
            if self.graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with sync:
                with autocast(self.device, self.dtype):
                    loss = self.net(batch.src, batch.tgt_in, batch.tgt_out, batch.links)  # (2,)
                s.scaler.scale(loss.sum() * (self.info.world / total_tokens)).backward()
            loss_sum += loss.detach()
        s.scaler.unscale_(s.optimizer)
        if self.tcfg.clip_norm > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.tcfg.clip_norm)
        s.scaler.step(s.optimizer)
        held = s.scaler._scale if s.scaler.is_enabled() else None  # updated in place by `update`
        scale = None if held is None else held.clone()
        s.scaler.update()
        # fp16: the scaler skipped the step (gradients not finite) where it lowered the scale; read on the
        # device, no host sync (GradScaler only says so through get_scale(), which waits for the GPU)
        self.skipped = None if scale is None or s.scaler._scale is None else s.scaler._scale < scale
        self.step_lr = s.optimizer.param_groups[0]["lr"]  # what this step used, for the log
        s.scheduler.step()
        s.optimizer.zero_grad(set_to_none=True)
        if s.ema is not None:
            s.ema.update(self.model)
        return loss_sum

    # ---- the loop ---------------------------------------------------------------------------------

    def fit(self) -> Progress:
        """Train until max steps, max epochs, patience, or Ctrl-C; always leaves a resumable last.pt."""
        t, p = self.tcfg, self.progress
        bar = self.records.progress_bar(p.step)
        if self.tcfg.precision == "auto" and self.device.type == "cpu":
            self.dtype = choose_cpu_precision(p, self.info)
        self.records.effective_batch(len(self.order.batches(p.epoch)))
        meter = ThroughputMeter()
        validated_at = -1
        clock = time.perf_counter() - p.train_seconds
        with self.stop.installed():
            while (ending := self._ending()) is None:
                step = self.order.next_step(p)
                group = step.build(self.data)
                if self.device.type == "cuda":
                    group = [b.pin_memory() for b in group]
                meter.add(group)
                self._count(self.train_step(group, step.total_tokens), sum(b.num_tgt_tokens for b in group))
                p.step += 1
                bar.update(1)
                if p.step % t.log_every == 0:
                    self._log_interval(bar, meter)
                if p.step % t.valid_every == 0:
                    self._validate_and_save()
                    validated_at = p.step
                p.train_seconds = time.perf_counter() - clock
                out_of_time = bool(t.max_minutes) and p.train_seconds >= 60 * t.max_minutes
                interrupted, out_of_time = any_rank([self.stop.requested, out_of_time], self.info)
                if interrupted or out_of_time:
                    self.stop.requested = interrupted  # on every rank, so all save together
                    if out_of_time:
                        log.info("train.max_minutes (%g) reached at step %d", t.max_minutes, p.step)
                    ending = None if interrupted else "max_minutes"
                    break
            bar.close()
            if self.stop.requested:
                self._save(is_best=False, numbered=False)
                log.warning("stopped at step %d; continue with: s2s train CONFIG --resume", p.step)
            elif validated_at != p.step:
                self._validate_and_save()
        self.ending = ending
        return p

    def _ending(self) -> Ending | None:
        """The limit that ends training now, if one does."""
        t, p = self.tcfg, self.progress
        if t.max_steps and p.step >= t.max_steps:
            return "max_steps"
        if t.max_epochs and p.epoch >= t.max_epochs:
            return "max_epochs"
        if t.patience and p.bad_validations >= t.patience:
            log.info("no improvement in %d validations: stopping early", p.bad_validations)
            return "patience"
        return None

    def _count(self, loss: torch.Tensor, tokens: int) -> None:
        """Add the last step's summed loss and alignment cost (2,) and its (this rank's) target tokens to
        the interval, on the device.

        With fp16, a step the loss scaler skipped (its gradients overflowed, on every rank alike) is
        counted as skipped, its loss and tokens left out: neither a diverged loss nor a trained step.
        """
        if self.skipped is not None:
            counted = ~self.skipped
            self._interval[:2] += torch.where(counted, loss, 0.0)
            self._interval[2] += counted * tokens
            self._interval[3] += ~counted
        else:
            self._interval[:2] += loss
            self._interval[2] += tokens

    def _flush_interval(self) -> None:
        """Move the on-device interval sums into `progress` (one host sync, only when logging or saving)."""
        p = self.progress
        loss, align, tokens, skipped = self._interval.tolist()
        p.interval_loss += loss
        p.interval_align += align
        p.interval_tokens += int(tokens)
        p.interval_skipped += int(skipped)
        self._interval.zero_()

    def _log_interval(self, bar: tqdm, meter: ThroughputMeter) -> None:
        p = self.progress
        self._flush_interval()
        tokens = int(all_reduce_sum(p.interval_tokens, self.info))
        skipped = int(all_reduce_max(p.interval_skipped, self.info))  # the same steps on every rank
        loss = all_reduce_sum(p.interval_loss, self.info) / max(tokens, 1)  # per target token, all ranks
        align = all_reduce_sum(p.interval_align, self.info) / max(tokens, 1)
        check_finite(loss + align, self.model, p.step, self.tcfg, every_step_skipped=tokens == 0 < skipped)
        self.records.interval(p.step, p.epoch, loss, self.step_lr, meter, bar, skipped, align)
        p.clear_interval()

    def _validate_and_save(self) -> None:
        """Rank 0 validates and saves; the decision to stop early is shared with every rank.

        With a weight average, both the raw and the averaged weights are validated; the better one
        counts for `best.pt` and patience, and is the one translation uses (`progress.inference`).
        """
        p = self.progress
        improved = False
        if self.info.is_main:
            results = {"raw": self._validate(self.model)}
            if self.state.ema is not None:
                results["ema"] = self._validate(self._averaged_model(self.state.ema))
            p.inference = min(results, key=lambda weights: self._score(results[weights]))
            score = self._score(results[p.inference])
            improved = p.best is None or score < p.best
            p.best = score if improved else p.best
            p.bad_validations = 0 if improved else p.bad_validations + 1
            self.records.validation(p.step, p.epoch, p.inference, results, improved)
        p.bad_validations = int(broadcast_from_main(p.bad_validations, self.info, patient=True))
        self._save(is_best=improved)

    def _validate(self, model: Model) -> ValidResult:
        return validate_sets(
            model, self.valid, self.tokenizers, self.tcfg, self.cfg.decode, self.device, self.dtype
        )

    def _score(self, result: ValidResult) -> float:
        """Lower is better: the loss, or the negated BLEU or accuracy (of train.best_direction)."""
        result = result.of(self.tcfg.best_direction)
        if self.tcfg.best_metric == "loss":
            return result.loss
        score = result.bleu if self.tcfg.best_metric == "bleu" else result.accuracy
        assert score is not None, f"validation measured no {self.tcfg.best_metric}"  # the config's rules
        return -score

    def _averaged_model(self, ema: WeightAverage) -> Model:
        """A copy of the model holding the moving-average weights of `ema`."""
        model = copy.deepcopy(self.model)
        model.load_state_dict(ema.model_state(self.model))
        return model

    # ---- checkpoints ------------------------------------------------------------------------------

    def _save(self, is_best: bool, numbered: bool = True) -> None:
        """Checkpoint (rank 0 writes); an interrupt writes only last.pt, not a numbered checkpoint.

        Never a diverged state: the loss summed over all ranks and the weights are checked first.
        """
        self._flush_interval()
        p = self.progress
        if self.info.enabled:
            # the saved interval sums cover all ranks; rank 0 carries them from here on
            p.interval_loss = all_reduce_sum(p.interval_loss, self.info)
            p.interval_align = all_reduce_sum(p.interval_align, self.info)
            p.interval_tokens = int(all_reduce_sum(p.interval_tokens, self.info))
            p.interval_skipped = int(all_reduce_max(p.interval_skipped, self.info))
        check_finite(p.interval_loss + p.interval_align, self.model, p.step, self.tcfg)
        if self.info.enabled and not self.info.is_main:
            p.clear_interval()
        state = self.state.to_checkpoint(self.info, self.device, self.origin)
        if self.info.is_main:
            keep = self.tcfg.keep_checkpoints
            last_only = self.tcfg.keep_optimizer == "last"
            save_training_state(self.run, state, p.step, keep, is_best, numbered, last_only)
        barrier(self.info, patient=True)  # rank 0 has been writing the checkpoint

    def resume(self) -> None:
        """Continue from `last.pt` (`TrainingState.restore`); the metrics after its step are dropped."""
        state = load_checkpoint(self.run.checkpoint_path("last"), self.device)
        self.state.restore(state, self.tcfg, self.info, self.device, self.order.describe())
        p = self.progress
        if self.info.is_main:
            self.run.truncate_metrics(p.step)
        log.info("resumed from step %d (epoch %d)", p.step, p.epoch)
