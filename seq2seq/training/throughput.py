"""Training throughput: tokens per second and the padding share of the batches, over all ranks."""

from __future__ import annotations

import time

from seq2seq.data.parallel import Batch
from seq2seq.training.distributed import DistInfo, all_reduce_sum


class ThroughputMeter:
    """Tokens per second since the last reading (and padding share of the batches seen)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.src = self.tgt = self.padded = 0

    def add(self, batches: list[Batch]) -> None:
        for b in batches:
            self.src += b.num_src_tokens
            self.tgt += b.num_tgt_tokens
            self.padded += b.src.numel() + b.tgt_out.numel()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def rates(self, info: DistInfo) -> dict[str, float]:
        """Throughput over all ranks since the previous call; resets the counters."""
        now = time.perf_counter()
        seconds = max(now - self.last, 1e-9)
        src, tgt, padded = (all_reduce_sum(v, info) for v in (self.src, self.tgt, self.padded))
        self.last, self.src, self.tgt, self.padded = now, 0, 0, 0
        return {
            "tgt_tokens_per_s": round(tgt / seconds, 1),
            "src_tgt_tokens_per_s": round((src + tgt) / seconds, 1),
            "padding": round(1 - (src + tgt) / max(padded, 1), 4),
        }
