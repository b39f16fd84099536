"""Where and how a model runs: device, precision, quantization and CPU threads, as one value for every
engine."""

from __future__ import annotations

from dataclasses import dataclass

from seq2seq.config.bounds import MAX_THREADS
from seq2seq.config.train import PRECISIONS
from seq2seq.errors import Seq2SeqError
from seq2seq.flags import Flag, declared, option

# --engine: which engine decodes, as `seq2seq.commands.engines` chooses it, for every command
ENGINE = declared(
    Flag(
        "auto (CTranslate2 on a CPU where it runs everything asked, its export made on first use into the "
        "cache: `s2s cache`; else s2s), s2s (s2s's own decoder) or ctranslate2. RUN_DIR may also be a "
        "directory made by `s2s export`."
    ),
    "auto",
)


@dataclass(frozen=True)
class Placement:
    """The command line's --device, --precision, --quantize and (`s2s serve`) --threads."""

    device: str = option("auto", "auto, cpu, cuda or cuda:N.")
    precision: str = option(
        "auto", "auto (bf16 on GPUs; on a CPU where its features make bf16 faster), fp32, bf16, fp16 (GPU)."
    )
    quantize: str | None = option(  # int8 (s2s, CPU only), or a CTranslate2 compute type
        None, "int8: dynamic int8 linear layers on the CPU (faster, -0.1 BLEU)."
    )
    # CPU threads: torch's for s2s's decoder; CTranslate2's batches decoded at once. 0: one per core
    threads: int = option(
        0, "CPU threads for torch and CTranslate2 (0 = one per core).", between=(0, MAX_THREADS)
    )


AUTO = Placement()  # the best device there is, at the precision it runs best


def check_device_name(name: str) -> str:
    """`name` if it names a device (auto, cpu, cuda, cuda:N), else an error saying which do.

    `device.resolve_device` checks the same names for torch; this check imports no torch, so that
    translating with CTranslate2 never loads it."""
    if not (name in ("auto", "cpu", "cuda") or (name.startswith("cuda:") and name[5:].isdigit())):
        raise Seq2SeqError(f"device {name!r} is not one of auto, cpu, cuda, cuda:N")
    return name


def check_precision_name(name: str) -> str:
    """`name` if it names a precision (`config.train.PRECISIONS`), else an error saying which do;
    torch-free, as `check_device_name`."""
    if name not in PRECISIONS:
        raise Seq2SeqError(f"--precision {name!r} is not one of {', '.join(PRECISIONS)}")
    return name
