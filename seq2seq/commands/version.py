"""`s2s --version`: what s2s is running with, read without importing torch or loading a model: the
package's version, torch's and CTranslate2's, the CPU's model and the features s2s decides from, the
GPUs CTranslate2 sees, and the engine `--engine auto` picks here."""

from __future__ import annotations

import importlib.metadata

import seq2seq
from seq2seq.cpu import read_cpu_features
from seq2seq.ct2.export_dir import ctranslate2_missing
from seq2seq.translate.placement import AUTO

# the flags s2s decides from: bf16 and int8 kernels (`precision: auto`, CTranslate2's int8 range)
FEATURES = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")


def installed(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            line = next((line for line in f if line.startswith("model name")), "")
    except OSError:
        line = ""
    return line.split(":", 1)[1].strip() if ":" in line else "unknown"


def version_lines() -> list[str]:
    """The lines `s2s --version` prints."""
    from seq2seq.commands.engines import auto_engine_here

    flags = read_cpu_features().flags
    seen = [flag for flag in FEATURES if flag in flags]
    gpus = ctranslate2_missing()
    if gpus is None:
        import ctranslate2

        gpus = f"{ctranslate2.get_cuda_device_count()} CUDA device(s) visible to CTranslate2"
    return [
        f"s2s {seq2seq.__version__}",
        f"torch {installed('torch')}, ctranslate2 {installed('ctranslate2')}",
        f"CPU: {cpu_model()} ({', '.join(seen) or 'none of ' + ', '.join(FEATURES)}); {gpus}",
        f"--engine auto: {auto_engine_here(AUTO)}",
    ]
