"""What training tells people: the log lines, `metrics.jsonl` records and TensorBoard curves."""

from __future__ import annotations

import logging
import sys
from typing import Any

from tqdm import tqdm

from seq2seq.config import TrainConfig
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.tensorboard_log import TensorBoard
from seq2seq.training.throughput import ThroughputMeter
from seq2seq.training.validation import ValidResult

log = logging.getLogger("seq2seq.training.trainer")


class TrainLog:
    """Records of one run; rank 0 writes them (other ranks take part in the sums)."""

    def __init__(self, run: RunDir, cfg: TrainConfig, info: DistInfo) -> None:
        self.run, self.cfg, self.info = run, cfg, info
        self.board: TensorBoard | None = None  # opened at the first record, after a resume has rewound

    def record(self, record: dict[str, Any]) -> None:
        """One metrics record (rank 0): to metrics.jsonl, and to TensorBoard when asked."""
        self.run.append_metrics(record)
        if self.cfg.tensorboard:
            if self.board is None:
                self.board = TensorBoard(self.run.tensorboard_dir, first_step=record["step"])
            self.board.add(record)

    def close(self) -> None:
        if self.board is not None:
            self.board.close()

    def progress_bar(self, step: int) -> tqdm:
        """The bar of the steps towards train.max_steps, from `step`, on rank 0's terminal only."""
        return tqdm(
            total=self.cfg.max_steps or None,
            initial=step,
            disable=not (self.info.is_main and sys.stderr.isatty()),
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=1.0,
            desc="train",
        )

    def effective_batch(self, batches_per_epoch: int) -> None:
        t = self.cfg
        log.info(
            "effective batch: up to %d tokens (%d per batch x %d accumulation x %d process(es)); "
            "%d batches per epoch per process",
            t.max_tokens * t.accum_steps * self.info.world,
            t.max_tokens,
            t.accum_steps,
            self.info.world,
            batches_per_epoch,
        )
        if t.shape_multiple:
            log.info(
                "fixed shapes: lengths in multiples of %d, rows max_tokens // length (train.shape_multiple)",
                t.shape_multiple,
            )

    def interval(
        self,
        step: int,
        epoch: int,
        loss: float,
        lr: float,
        meter: ThroughputMeter,
        bar: tqdm,
        skipped: int = 0,
        align: float = 0.0,
    ) -> None:
        """The log line and train record of a log interval (`meter` is read on every rank).

        `skipped`: steps the fp16 loss scaler skipped in the interval (their loss overflowed); `align`:
        the weighted guided-alignment cost per target token, recorded when train.guided_alignment is on.
        """
        rates = meter.rates(self.info)
        if not self.info.is_main:
            return
        record = {
            "kind": "train",
            "step": step,
            "epoch": epoch,
            "train_loss": round(loss, 5),
            "lr": lr,
            **rates,
            "elapsed_s": round(meter.elapsed(), 2),
        }
        guided = self.cfg.guided_alignment.active
        if guided:
            record["align_loss"] = round(align, 5)
        if skipped:
            record["skipped_steps"] = skipped
        self.record(record)
        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{rates['tgt_tokens_per_s']:.0f}")
        log.info(
            "step %d | epoch %d | loss %.4f%s | lr %.2e | %.0f tgt tok/s | padding %.1f%%%s",
            step,
            epoch,
            loss,
            f" | align {align:.4f}" if guided else "",
            lr,
            rates["tgt_tokens_per_s"],
            100 * rates["padding"],
            f" | {skipped} step(s) skipped by the fp16 loss scaler" if skipped else "",
        )

    def validation(
        self, step: int, epoch: int, chosen: str, results: dict[str, ValidResult], improved: bool
    ) -> None:
        """One record and log line: the `chosen` weights' scores, and each kind's when averaging."""
        record = {"kind": "valid", "step": step, "epoch": epoch, "weights": chosen}
        record |= validation_fields(results[chosen])
        if len(results) > 1:
            for weights, other in results.items():
                record |= {
                    f"{weights}_{k}": v for k, v in validation_fields(other).items() if k != "bleu_signature"
                }
        self.record(record)
        described = [
            f"{weights} loss {r.loss:.4f}, ppl {r.ppl:.2f}"
            + (f", BLEU {r.bleu:.2f}" if r.bleu is not None else "")
            + (f", accuracy {r.accuracy:.2f}%" if r.accuracy is not None else "")
            + (" (mean); " if r.directions else "")
            + ", ".join(
                f"{direction} BLEU {each.bleu:.2f}"
                if each.bleu is not None
                else f"{direction} loss {each.loss:.4f}"
                for direction, each in r.directions.items()
            )
            for weights, r in results.items()
        ]
        using = f"; using {chosen} weights" if len(results) > 1 else ""
        best = " (best so far)" if improved else ""
        log.info("validation at step %d: %s%s%s", step, " | ".join(described), using, best)
        for src, ref, hyp in results[chosen].samples:
            log.info("  source: %s\n  reference: %s\n  hypothesis: %s", src, ref, hyp)


def validation_fields(result: ValidResult) -> dict[str, Any]:
    """The metrics.jsonl fields of one validation result; a multilingual run's also by direction
    (`valid_bleu.de-en`), besides their mean (`valid_bleu`)."""
    fields: dict[str, Any] = {"valid_loss": round(result.loss, 5), "valid_ppl": round(result.ppl, 3)}
    if result.bleu is not None:
        fields |= {"valid_bleu": round(result.bleu, 2), "bleu_signature": result.bleu_signature}
    if result.accuracy is not None:
        fields["valid_accuracy"] = round(result.accuracy, 2)
    for direction, each in result.directions.items():
        fields |= {
            f"{key}.{direction}": value
            for key, value in validation_fields(each).items()
            if key != "bleu_signature"
        }
    return fields
