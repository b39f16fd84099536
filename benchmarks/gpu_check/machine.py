"""The machine, described in a child process: importing torch or starting CUDA may be what fails."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

OPTIONAL = {"ctranslate2": "s2s export and the engines benchmark", "fastapi": "s2s serve and its tests"}


def describe(dry_run: bool, work: str) -> None:
    """Write WORK/machine.json: versions, the GPUs (none in the dry run: CUDA is not called), the date."""
    import torch

    info: dict[str, Any] = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "missing": [name for name in OPTIONAL if importlib.util.find_spec(name) is None],
        "gpus": 0,
    }
    if not dry_run and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info |= {"gpus": torch.cuda.device_count(), "gpu": props.name, "driver": nvidia_driver()}
        info |= {
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
        }
        info |= {"cudnn": torch.backends.cudnn.version(), "bf16_supported": torch.cuda.is_bf16_supported()}
    Path(work, "machine.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info, indent=2))
    if not dry_run and info["gpus"] == 0:
        sys.exit(f"error: torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA GPU")


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()


def nvidia_driver() -> str | None:
    query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
    try:
        done = subprocess.run(query, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.splitlines()[0].strip() if done.returncode == 0 and done.stdout.strip() else None
