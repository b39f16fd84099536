"""The command line of `python -m benchmarks`, parsed once into one typed value."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from seq2seq.config import data_files, load_config
from seq2seq.config.bounds import MAX_BATCH_TOKENS, MAX_BEAM, MAX_SECONDS, MAX_THREADS, MAX_VOCAB
from seq2seq.files import check_outputs
from seq2seq.run.layout import RunDir
from seq2seq.run.parts import run_parts

SECTIONS = ("train", "decode", "engines", "fairseq", "data", "serve", "runs", "hf", "startup")
MODEL_NAMES = ("recipe", "base")
BATCHINGS = ("static", "continuous", "default")
MAX_CLIENTS = 1024  # concurrent clients of the serve section


class UsageError(ValueError):
    """A mistake in the command line; reported as `error: ...` with exit code 2, before any work."""


@dataclass(frozen=True)
class Options:
    """Everything the sections read; each takes the fields it uses."""

    config: str  # the recipe: train, fairseq and data sections
    run_dir: str | None  # a trained run: decode, engines, serve, startup (and train's tokenizer)
    runs: tuple[str, ...]  # runs: trained runs side by side, the first the reference
    shortlist: int  # runs: also each run's int8 export with `s2s export --shortlist` this (0 = not)
    src: str
    ref: str | None
    limit: int  # first N non-empty lines of --src (0 = all)
    sections: tuple[str, ...]
    beams: tuple[int, ...]  # decode and engines
    grid_tokens: tuple[int, ...]  # engines: the batch sizes its grid tries
    fractions: tuple[float, ...]  # decode: the largest beam, cached, also on these leading shares
    repeat: int
    fairseq_python: str | None
    fairseq_steps: int
    models: tuple[str, ...]
    threads: int
    warmup: int
    steps: int
    shape_multiple: (
        int  # train: also s2s compiled at fixed batch shapes, lengths a multiple of this (0 = not)
    )
    matmul_size: int
    device: str
    pairs: tuple[int, ...]  # data: corpus sizes
    work: str | None  # data: where corpora and runs go (default: a temporary directory)
    ddp: bool  # data: also torchrun with 2 ranks on the largest corpus
    clients: tuple[int, ...]  # serve: numbers of concurrent clients
    batchings: tuple[str, ...]  # serve: the servers, side by side (BATCHINGS)
    serve_precision: str  # serve: s2s's decoder's, offline and in its servers
    mixed_clients: tuple[int, ...]  # serve: (short, long) clients of the mixed load, or () for none
    serve_beam: int
    window_ms: float
    rounds: int
    time_limit: float
    startup_runs: int  # startup: runs of each command (the median counts)
    json: Path | None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks", description="Benchmark s2s: " + ", ".join(SECTIONS) + "."
    )
    p.add_argument("--config", default="configs/multi30k_de_en.yaml", help="recipe: train, fairseq, data")
    p.add_argument("--run-dir", help="trained run: decode, engines, serve, startup; train its tokenizer")
    p.add_argument(
        "--runs", default="", help="runs: trained run directories, comma-separated, first = reference"
    )
    p.add_argument(
        "--shortlist", type=int, default=0, help="runs: also each run's int8 export with this --shortlist"
    )
    p.add_argument("--src", default="data/multi30k/test_2016_flickr.de", help="source lines to decode")
    p.add_argument("--ref", help="references of --src: BLEU of each engine in the engines section")
    p.add_argument("--limit", type=int, default=0, help="decode only the first N lines (0 = all)")
    p.add_argument(
        "--sections",
        help=f"comma-separated, of {','.join(SECTIONS)} (default: train and fairseq; with --run-dir "
        "also decode and engines; engines and fairseq where installed)",
    )
    p.add_argument("--beams", default="1,5", help="decode, engines: beam sizes (1 = greedy)")
    p.add_argument(
        "--grid-tokens", default="2000,4000,8000", help="engines: batch sizes (source tokens) to try"
    )
    p.add_argument("--fractions", default="0.25,0.5", help="decode: largest beam also on these shares")
    p.add_argument("--repeat", type=int, default=3, help="engines: rounds over each setting (fastest counts)")
    p.add_argument("--fairseq-python", help="fairseq: a python that imports fairseq (default: this one)")
    p.add_argument("--fairseq-steps", type=int, default=80, help="fairseq: training steps of each trainer")
    p.add_argument("--models", default="recipe,base", help="train: comma-separated, of recipe,base")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    p.add_argument("--warmup", type=int, default=3, help="train: steps before the timed window")
    p.add_argument("--steps", type=int, default=10, help="train: timed training steps")
    p.add_argument("--shape-multiple", type=int, default=0, help="train: also s2s at fixed shapes, compiled")
    p.add_argument("--matmul-size", type=int, default=2048, help="train: square matmul for peak FLOP/s")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--pairs", default="507500,2030000", help="data: corpus sizes (pairs, comma-separated)")
    p.add_argument("--work", help="data: where corpora and runs go (default: a temporary directory)")
    p.add_argument("--no-ddp", action="store_true", help="data: skip the torchrun measurement")
    p.add_argument("--clients", default="1,8,32,128", help="serve: numbers of concurrent clients")
    p.add_argument(
        "--batching",
        default=",".join(BATCHINGS),
        help="serve: the servers side by side: s2s's decoder batching static or continuous, and default "
        "(`s2s serve RUN` with no --engine, --precision or --batching)",
    )
    p.add_argument(
        "--serve-precision", default="auto", help="serve: s2s's decoder's, auto (timed probe), fp32 or bf16"
    )
    p.add_argument(
        "--mixed-clients", default="8,4", help="serve: short,long clients of the mixed load ('' = none)"
    )
    p.add_argument("--serve-beam", type=int, default=5, help="serve: beam size")
    p.add_argument("--window-ms", type=float, default=5.0, help="serve: the server's --batch-window-ms")
    p.add_argument("--rounds", type=int, default=3, help="serve: offline then server, this many times")
    p.add_argument("--time-limit", type=float, default=300.0, help="serve: seconds per load phase")
    p.add_argument("--startup-runs", type=int, default=5, help="startup: runs of each command (median)")
    p.add_argument("--json", type=Path, help="write all results to this file")
    return p


def _items(value: str, option: str, valid: tuple[str, ...] = ()) -> tuple[str, ...]:
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in items if valid and v not in valid]
    if bad or (valid and not items):
        raise UsageError(f"{option}: {','.join(bad) or 'nothing'} given; choose from {','.join(valid)}")
    return items


def _numbers(value: str, option: str, kind: type[int] | type[float]) -> tuple:
    try:
        return tuple(kind(v) for v in _items(value, option))
    except ValueError:
        raise UsageError(f"{option}: {value!r} is not a comma-separated list of numbers") from None


SERVER_TIMEOUT_MS = 60_000.0  # `s2s serve --timeout`'s default, which the serve section keeps
# option -> (field, lowest, highest, what the range implies); a list option's every number is checked
NUMBERS: dict[str, tuple[str, float, float, str]] = {
    "--shortlist": ("shortlist", 0, MAX_VOCAB, "no vocabulary is larger"),
    "--limit": ("limit", 0, 2**31 - 1, "0 = all"),
    "--beams": ("beams", 1, MAX_BEAM, "each step scores beam x vocabulary"),
    "--grid-tokens": ("grid_tokens", 1, MAX_BATCH_TOKENS, "a batch's memory"),
    "--repeat": ("repeat", 1, 1000, "rounds over each setting"),
    "--fairseq-steps": ("fairseq_steps", 8, 1_000_000, "its timing skips the first steps"),
    "--threads": ("threads", 0, MAX_THREADS, "0 = torch's default"),
    "--warmup": ("warmup", 0, 1_000_000, "steps"),
    "--steps": ("steps", 1, 1_000_000, "steps"),
    "--shape-multiple": ("shape_multiple", 0, 1024, "0 = not; lengths a multiple of this"),
    "--matmul-size": ("matmul_size", 1, 32_768, "three n x n fp32 matrices: 12 GiB at the most"),
    "--pairs": ("pairs", 1, 100_000_000, "a corpus written to disk and trained on"),
    "--clients": ("clients", 1, MAX_CLIENTS, "a thread and a connection each"),
    "--mixed-clients": ("mixed_clients", 1, MAX_CLIENTS, "a thread and a connection each"),
    "--serve-beam": ("serve_beam", 1, MAX_BEAM, "each step scores beam x vocabulary"),
    "--window-ms": ("window_ms", 0, SERVER_TIMEOUT_MS - 1, "below the server's 60 s --timeout"),
    "--rounds": ("rounds", 1, 1000, "offline then server, each round"),
    "--time-limit": ("time_limit", 1e-3, MAX_SECONDS, "seconds per load phase"),
    "--fractions": ("fractions", 1e-6, 1 - 1e-6, "shares of the sentences, in (0, 1)"),
    "--startup-runs": ("startup_runs", 1, 1000, "a fresh process each"),
}


def check_numbers(opts: Options) -> None:
    """Every number of `NUMBERS` in its range (NaN and the infinities are not), else a `UsageError`."""
    for option, (field, low, high, why) in NUMBERS.items():
        value = getattr(opts, field)
        for number in value if isinstance(value, tuple) else (value,):
            if not low <= number <= high:
                raise UsageError(f"{option} {number}: must be in [{_shown(low)}, {_shown(high)}] ({why})")
    if not opts.beams or not opts.grid_tokens or not opts.clients:
        raise UsageError("--beams, --grid-tokens and --clients: one number or more each")


def _shown(bound: float) -> str:
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def parse(argv: list[str] | None) -> Options:
    """Parse and check the command line; a mistake raises `UsageError` before any work."""
    a = _parser().parse_args(argv)
    default = "train,decode,engines,fairseq" if a.run_dir else "train,fairseq"
    opts = Options(
        config=a.config,
        run_dir=a.run_dir,
        runs=_items(a.runs, "--runs"),
        shortlist=a.shortlist,
        src=a.src,
        ref=a.ref,
        limit=a.limit,
        sections=_items(a.sections or default, "--sections", SECTIONS),
        beams=_numbers(a.beams, "--beams", int),
        grid_tokens=_numbers(a.grid_tokens, "--grid-tokens", int),
        fractions=_numbers(a.fractions, "--fractions", float),
        repeat=a.repeat,
        fairseq_python=a.fairseq_python,
        fairseq_steps=a.fairseq_steps,
        models=_items(a.models, "--models", MODEL_NAMES),
        threads=a.threads,
        warmup=a.warmup,
        steps=a.steps,
        shape_multiple=a.shape_multiple,
        matmul_size=a.matmul_size,
        device=a.device,
        pairs=_numbers(a.pairs, "--pairs", int),
        work=a.work,
        ddp=not a.no_ddp,
        clients=_numbers(a.clients, "--clients", int),
        batchings=_items(a.batching, "--batching", BATCHINGS),
        serve_precision=a.serve_precision,
        mixed_clients=_numbers(a.mixed_clients, "--mixed-clients", int),
        serve_beam=a.serve_beam,
        window_ms=a.window_ms,
        rounds=a.rounds,
        time_limit=a.time_limit,
        startup_runs=a.startup_runs,
        json=a.json,
    )
    check_numbers(opts)
    if opts.serve_precision not in ("auto", "fp32", "bf16"):
        raise UsageError("--serve-precision: auto, fp32 or bf16")
    if opts.mixed_clients and len(opts.mixed_clients) != 2:
        raise UsageError("--mixed-clients: two numbers, short,long (or '' for no mixed load)")
    if {"decode", "engines", "serve", "hf", "startup"} & set(opts.sections) and not opts.run_dir:
        raise UsageError(
            "--sections decode/engines/serve/hf/startup need --run-dir RUN (a trained run directory)"
        )
    if "runs" in opts.sections and not opts.runs:
        raise UsageError(
            "--sections runs needs --runs A,B,... (trained run directories, the first the reference)"
        )
    check_places(opts)
    return opts


def check_places(opts: Options) -> None:
    """--json and --work (whose corpora and runs the data section replaces) are none of what the
    benchmarks read and hold none of it: the recipe and its data files, the runs, --src, --ref. A run
    is read as `run_parts` say: a new file beside its config.yaml is allowed."""
    reads: dict[str, Path | None] = {"--config": Path(opts.config), "--src": Path(opts.src)}
    reads["--ref"] = Path(opts.ref) if opts.ref else None
    if Path(opts.config).is_file():
        reads |= {f"the recipe's data.{k}": Path(p) for k, p in data_files(load_config(opts.config)).items()}
    for label, run in [("--run-dir", opts.run_dir), *(("--runs", r) for r in opts.runs)]:
        if run:
            reads |= {f"{label} {run}: {part}": path for part, path in run_parts(RunDir(run)).items()}
    check_outputs({"--json": opts.json}, reads, {"--work": Path(opts.work) if opts.work else None})
