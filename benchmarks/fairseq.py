"""Training side by side with fairseq: the same model, data, pieces, batch size and steps.

Each trainer runs as its own command-line job, one at a time, with the same number of threads:
`s2s train` in fp32, bf16 and `precision: auto`, and `fairseq-train` (fp32: its `--bf16` does not run
on a CPU) on the SentencePiece pieces of the s2s run it follows. fairseq runs in the interpreter
given (`--fairseq-python`, e.g. a virtual environment with fairseq 0.12), or in this one when it
imports fairseq. Throughput is target tokens per second (target pieces plus the end-of-sentence
token, no padding: fairseq's `wps` counts the same), the median of the log intervals after the first.
Peak RSS is each trainer process's own (memory.py).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

import torch

from benchmarks import memory
from benchmarks.options import Options
from seq2seq.config import Config, load_config
from seq2seq.data.tokenizer import Tokenizer, load_tokenizers
from seq2seq.errors import Seq2SeqError
from seq2seq.run.layout import RunDir

PRECISIONS = ("fp32", "bf16", "auto")


def imports_fairseq(python: str) -> bool:
    """Whether interpreter `python` can import fairseq."""
    return subprocess.run([python, "-c", "import fairseq"], capture_output=True, check=False).returncode == 0


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None (a --fairseq-python that fails is an error, in `run`)."""
    if opts.fairseq_python is None and not imports_fairseq(sys.executable):
        return "this interpreter cannot import fairseq; give --fairseq-python PYTHON"
    return None


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """s2s and fairseq training on the CPU, one after the other, with this process's threads."""
    python = opts.fairseq_python or sys.executable
    if not imports_fairseq(python):
        raise Seq2SeqError(f"--fairseq-python {python}: it cannot import fairseq")
    return run_fairseq_section(opts.config, python, opts.fairseq_steps, torch.get_num_threads())


def run_fairseq_section(config: str, python: str, steps: int, threads: int) -> dict[str, Any]:
    """s2s in each precision, then fairseq on the same pieces; rows and s2s / fairseq ratios."""
    cfg = load_config(config)
    interval = max(steps // 4, 1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="s2s-vs-fairseq-") as scratch:
        work = Path(scratch)
        for precision in PRECISIONS:
            rows.append(_s2s_row(config, work / "s2s", precision, steps, interval, threads))
        data = _fairseq_data(cfg, work / "s2s", work / "fairseq", python)
        rows.append(_fairseq_row(cfg, data, python, steps, interval, threads, work / "fairseq"))
    fairseq = rows[-1]["tgt_tokens_per_s"]
    return {
        "config": config,
        "steps": steps,
        "threads": threads,
        "fairseq_python": python,
        "results": rows,
        "s2s_over_fairseq_fp32": {r["precision"]: r["tgt_tokens_per_s"] / fairseq for r in rows[:-1]},
    }


def report(section: dict[str, Any]) -> str:
    lines = [
        f"== fairseq: training against fairseq ({section['config']}, {section['steps']} steps, "
        f"{section['threads']} "
        "threads; tgt tok/s = median of the log intervals after the first)",
        f"{'trainer':<10}{'precision':<16}{'tgt tok/s':>10}{'vs fairseq':>12}{'peak RSS MiB':>13}",
    ]
    fairseq = section["results"][-1]["tgt_tokens_per_s"]
    for r in section["results"]:
        lines.append(
            f"{r['trainer']:<10}{r['label']:<16}{r['tgt_tokens_per_s']:>10.0f}"
            f"{r['tgt_tokens_per_s'] / fairseq:>11.2f}x{r['peak_rss_mib']:>13.0f}"
        )
    return "\n".join(lines)


def targets(section: dict[str, Any]) -> dict[str, float]:
    """The training targets: s2s against fairseq fp32, and `auto` against the better precision."""
    out = {f"s2s train {p} / fairseq fp32, tgt tok/s": r for p, r in section["s2s_over_fairseq_fp32"].items()}
    speed = {r["precision"]: r["tgt_tokens_per_s"] for r in section["results"] if r["trainer"] == "s2s"}
    out["s2s train auto / the better of fp32 and bf16"] = speed["auto"] / max(speed["fp32"], speed["bf16"])
    return out


def _s2s_row(config: str, run_dir: Path, precision: str, steps: int, interval: int, threads: int) -> dict:
    settings = {
        "run_dir": run_dir,
        "train.precision": precision,
        "train.max_steps": steps,
        "train.log_every": interval,
        "train.valid_every": 10 * steps,  # no validation inside the timed steps
        "train.max_minutes": 0,
        "train.valid_bleu": "false",
        "train.best_metric": "loss",
        "train.compile": "false",
    }
    args = ["train", config, "--overwrite"]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    peak = _run(sys.executable, "seq2seq", args, threads, run_dir.parent / "s2s.out")
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    speeds = [float(x) for x in re.findall(r"\| step \d+ .*?\| (\d+) tgt tok/s", log)]
    label = f"auto: {auto_choice(log)}" if precision == "auto" else precision
    return _row("s2s", precision, label, speeds, peak)


def auto_choice(log: str) -> str:
    """What `precision: auto` chose, as train.log says (`precision auto on this CPU: bf16: ...`)."""
    chosen = re.search(r"precision auto on this CPU: (\w+):", log)
    return chosen.group(1) if chosen else "not logged"


def _fairseq_data(cfg: Config, s2s_run: Path, out: Path, python: str) -> Path:
    """The training and validation pairs as the s2s run's pieces, binarized by fairseq-preprocess."""
    tokenizers = load_tokenizers(RunDir(s2s_run).tokenizer_dir, cfg.tokenizer.joint)
    out.mkdir()
    d = cfg.data
    files = {"train": (d.train_src, d.train_tgt), "valid": ((d.valid_src,), (d.valid_tgt,))}
    target = cast(Tokenizer, tokenizers.tgt)  # a translation run's: the peer trains translation only
    for split, (src, tgt) in files.items():
        for lang, paths, tokenizer in (("src", src, tokenizers.src), ("tgt", tgt, target)):
            lines = []
            for path in paths:
                lines += Path(path).read_text(encoding="utf-8").splitlines()
            text = "".join(" ".join(tokenizer.pieces(line)) + "\n" for line in lines)
            (out / f"{split}.{lang}").write_text(text, encoding="utf-8")
    args = ["--source-lang", "src", "--target-lang", "tgt"]
    args += ["--trainpref", str(out / "train"), "--validpref", str(out / "valid")]
    args += ["--destdir", str(out / "bin")]
    args += ["--workers", "1"] + (["--joined-dictionary"] if cfg.tokenizer.joint else [])
    _run(python, "fairseq_cli.preprocess", args, 1, out / "preprocess.out")
    return out / "bin"


def _fairseq_row(
    cfg: Config, data: Path, python: str, steps: int, interval: int, threads: int, work: Path
) -> dict:
    m, t = cfg.model, cfg.train
    command = [str(data), "--arch", "transformer", "--cpu", "--seed", "1"]
    for side in ("encoder", "decoder"):
        command += [f"--{side}-layers", str(getattr(m, f"{side}_layers"))]
        command += [f"--{side}-embed-dim", str(m.d_model)]
        command += [f"--{side}-ffn-embed-dim", str(m.ffn_dim), f"--{side}-attention-heads", str(m.heads)]
        command += [f"--{side}-normalize-before"] if m.norm == "pre" else []
    if m.share_all_embeddings:
        command += ["--share-all-embeddings"]
    elif m.tie_output:
        command += ["--share-decoder-input-output-embed"]
    command += ["--dropout", str(m.dropout), "--attention-dropout", str(m.attention_dropout)]
    command += ["--activation-dropout", str(m.activation_dropout)]
    command += ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", str(t.label_smoothing)]
    command += ["--optimizer", "adam", "--adam-betas", "(0.9,0.98)", "--weight-decay", str(t.weight_decay)]
    command += ["--lr", str(t.lr), "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(t.warmup_steps)]
    command += ["--max-tokens", str(t.max_tokens), "--max-update", str(steps)]
    command += ["--log-interval", str(interval)]
    command += ["--log-format", "simple", "--no-save", "--disable-validation", "--num-workers", "0"]
    command += ["--save-dir", str(work / "checkpoints")]
    peak = _run(python, "fairseq_cli.train", command, threads, work / "train.out")
    log = (work / "train.out").read_text(encoding="utf-8")
    speeds = [float(x) for x in re.findall(r"train_inner \|.*? wps=([\d.]+)", log)]
    return _row("fairseq", "fp32", "fp32", speeds, peak)


def _row(trainer: str, precision: str, label: str, speeds: list[float], peak: float) -> dict:
    if len(speeds) < 2:
        raise Seq2SeqError(f"{trainer} {precision}: fewer than 2 log intervals; give more steps")
    return {
        "trainer": trainer,
        "precision": precision,
        "label": label,
        "interval_tgt_tokens_per_s": speeds,
        "tgt_tokens_per_s": statistics.median(speeds[1:]),
        "peak_rss_mib": peak,
    }


def _run(python: str, module: str, args: list[str], threads: int, log: Path) -> float:
    """Run `python -m module args` alone with `threads` threads, output to `log`; its peak RSS in MiB."""
    env = os.environ | {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    peak_file = log.with_suffix(".peak")
    with log.open("w", encoding="utf-8") as out:
        command = memory.measured_command(python, module, args, peak_file)
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise Seq2SeqError(f"{python} -m {module} ... failed (exit {done.returncode}):\n{tail}")
    return memory.read_peak(peak_file)
