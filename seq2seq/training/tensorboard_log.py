"""TensorBoard curves of a training run (optional: `pip install 's2s[tensorboard]'`).

Every numeric field of a metrics.jsonl record becomes a scalar named `KIND/FIELD` (`train/lr`,
`valid/valid_bleu`) at the record's step, written under RUN_DIR/tensorboard/ by rank 0 only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seq2seq.errors import ConfigError


def check_available() -> None:
    """Fail before training starts, not at the first log line, when the package is missing."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise ConfigError(
            "train.tensorboard needs the tensorboard package: pip install 's2s[tensorboard]'"
        ) from None


class TensorBoard:
    def __init__(self, directory: Path, first_step: int) -> None:
        """`first_step`: events from an earlier attempt at this step or later are dropped (after --resume)."""
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(directory), purge_step=first_step)

    def add(self, record: dict[str, Any]) -> None:
        for key, value in record.items():
            if (
                key not in ("step", "epoch")
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
            ):
                self.writer.add_scalar(f"{record['kind']}/{key}", value, record["step"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
