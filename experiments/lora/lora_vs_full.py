"""LoRA against full fine-tuning, from one trained run, on the same data and step budget.

    python -m experiments.lora.lora_vs_full BASE_RUN CONFIG OUT [--steps N]

CONFIG is the config BASE_RUN was trained with (its model and tokenizer sections are what
train.init_from requires); each setting trains OUT/NAME from BASE_RUN's best checkpoint for N steps,
alone, one after the other. Printed per setting, as a Markdown table: val BLEU (greedy, at the last
step, and beam 5 through `s2s evaluate`), trainable parameters, seconds per step, the peak resident
memory of the training process, and the size of a numbered checkpoint, last.pt and base.pt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# name -> the `--set` overrides of the setting (the learning rates are chosen on val: two each)
SETTINGS: dict[str, list[str]] = {
    "full, lr 3e-4": ["train.lr=3e-4"],
    "full, lr 1e-3": ["train.lr=1e-3"],
    "LoRA r16, lr 1e-3": ["train.lr=1e-3", "train.lora.rank=16", "train.lora.alpha=32"],
    "LoRA r16, lr 3e-3": ["train.lr=3e-3", "train.lora.rank=16", "train.lora.alpha=32"],
}


def train(config: Path, run: Path, base: Path, steps: int, overrides: list[str]) -> int:
    """Train `run` from `base`; returns the peak resident memory of the process, in KiB."""
    common = [
        f"run_dir={run}",
        f"train.init_from={base}",
        f"train.max_steps={steps}",
        "train.max_minutes=0",
        "train.schedule=constant",
        "train.warmup_steps=50",
        f"train.valid_every={steps}",
        "train.keep_checkpoints=1",
        f"train.log_every={max(1, min(25, steps // 4))}",
    ]
    args = [sys.executable, "-m", "seq2seq", "train", str(config), "--overwrite"]
    for value in [*common, *overrides]:
        args += ["--set", value]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"training {run} failed")
    return usage.ru_maxrss


def evaluate(run: Path, data: Path, out: Path) -> float:
    """val BLEU with beam 5 (the config's decode section); the report goes to `out`."""
    subprocess.run(
        [sys.executable, "-m", "seq2seq", "evaluate", str(run), "--src", str(data / "val.de")]
        + ["--ref", str(data / "val.en"), "--json", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return float(json.loads(out.read_text())["systems"][0]["scores"]["bleu"]["score"])


def measured(run: Path, memory: int, data: Path) -> dict[str, object]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    trains = [r for r in records if r["kind"] == "train"]
    first, last = trains[0], trains[-1]
    seconds = (last["elapsed_s"] - first["elapsed_s"]) / (last["step"] - first["step"])
    log = (run / "train.log").read_text()
    found = re.search(r"([\d,]+) trainable parameters", log) or re.search(r"model: ([\d,]+) parameters", log)
    assert found, "train.log names no parameter count"
    checkpoints = run / "checkpoints"
    numbered = max(checkpoints.glob("step_*.pt"), key=lambda p: p.stat().st_mtime)
    base = checkpoints / "base.pt"
    return {
        "greedy": [r for r in records if r["kind"] == "valid"][-1]["valid_bleu"],
        "beam": evaluate(run, data, run.parent / f"{run.name}_val.json"),
        "trainable": found.group(1),
        "s/step": seconds,
        "memory": memory / 1024,
        "numbered": numbered.stat().st_size / 1e6,
        "last": (checkpoints / "last.pt").stat().st_size / 1e6,
        "base": base.stat().st_size / 1e6 if base.is_file() else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--data", type=Path, default=Path("data/multi30k"))
    parser.add_argument("--only", nargs="*", default=list(SETTINGS), help="the settings to run, by name")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"| from {args.base} | val BLEU greedy | val BLEU beam 5 | trainable | s/step | peak RSS MB |", end=""
    )
    print(" step_N.pt MB | last.pt MB | base.pt MB |\n|---|---|---|---|---|---|---|---|---|")
    before = evaluate(args.base, args.data, args.out / "base_val.json")
    print(f"| no fine-tuning | | {before:.2f} | | | | | | |", flush=True)
    for name, overrides in ((name, SETTINGS[name]) for name in args.only):
        run = args.out / re.sub(r"[^\w]+", "_", name).strip("_")
        m = measured(run, train(args.config, run, args.base, args.steps, overrides), args.data)
        print(
            f"| {name} | {m['greedy']:.2f} | {m['beam']:.2f} | {m['trainable']} | {m['s/step']:.3f} | "
            f"{m['memory']:.0f} | {m['numbered']:.1f} | {m['last']:.1f} | {m['base']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
