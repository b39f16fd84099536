"""What every step of the GPU check reads (`Check`) and what it gives back (`StepResult`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "configs" / "multi30k_de_en.yaml"
MULTI30K = ("train.de", "train.en", "val.de", "val.en", "test_2016_flickr.de", "test_2016_flickr.en")


class UsageError(ValueError):
    """A mistake on the command line or in the data path: `error: ...`, exit code 2, nothing run."""


@dataclass(frozen=True)
class Check:
    """What every step reads: where things are and whether this is the dry run."""

    data: Path
    out: Path
    work: Path
    dry_run: bool
    tests: str
    steps: tuple[str, ...]
    budget_s: float

    @property
    def device(self) -> str:
        return "cpu" if self.dry_run else "cuda"

    @property
    def precision(self) -> str:
        """bf16, what the GPU runs; the dry run keeps fp32 on a CPU whose bf16 is emulated (~30x slower)."""
        return "fp32" if self.dry_run and not _cpu_has_bf16_kernels() else "bf16"

    @property
    def config(self) -> Path:
        return self.work / "recipe.yaml"

    def size(self, real: Any, dry: Any) -> Any:
        return dry if self.dry_run else real


@functools.cache
def _cpu_has_bf16_kernels() -> bool:
    from seq2seq.device import cpu_has_bf16_kernels  # torch: imported only where a step needs it

    return cpu_has_bf16_kernels()


@dataclass
class StepResult:
    """How one step went, and the numbers read from its files."""

    name: str
    status: str = "not run"  # passed | failed | timed out | skipped (not a failure) | not run
    seconds: float = 0.0
    budget_s: float = 0.0
    exit_code: int | None = None
    command: str = ""
    note: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status != "passed" and self.status != "skipped"
