"""Load test of `s2s serve`: s2s's decoder with static and continuous batching, and the server a user
gets by default, side by side at several numbers of concurrent clients, each against offline
translation of the same lines with its own engine; then a mixed load.

In one run, the offline engines are loaded once, as `s2s translate` loads them: s2s's decoder
(`Translator.translate`), its precision (`--serve-precision`, auto by default: a timed probe)
resolved once, and the default (`--engine auto`: on a CPU, CTranslate2 over the export cache,
which each run makes fresh in a temporary directory: default_engine.py). One server per `--batching`
is started on 127.0.0.1 (a free port), with the same beam and threads: `static` and `continuous` run
s2s's decoder at that precision; `default` is started without --engine, --precision or --batching
(on a CPU: CTranslate2, static batches with the engine's `calls_at_once` decode calls in flight).
A few requests warm each up and single requests sent one at a time give its idle latency. Then, each
round, for each number of clients N: the first 100 x N lines (at most all of them) are translated
offline by each engine, timed after the model is loaded, and each of its servers gets every one of
those lines once, as its own request, from N client threads that each wait for an answer before
sending the next (serve_load.py). Offline and server phases alternate, so a disturbance hits one
phase of one round. It prints sentences/s of both and their ratio (medians over the rounds), latency
percentiles over the rounds, and how many answers differ from the offline translation of the
server's engine or never came.

The mixed load (`--mixed-clients S,L`): S clients send the shortest quarter of the lines, one line
per request, first alone and then while L clients send the longest quarter, 8 lines per request,
round and round. Short requests should not wait for long ones: the p99 latency of the short requests
under the mixed load over their p99 alone is the number to watch (at most 2).

The `serve` extra must be installed.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import torch

from benchmarks.default_engine import cache_env
from benchmarks.options import Options
from benchmarks.serve_load import (
    LONG_LINES,
    WARMUP_REQUESTS,
    LoadResult,
    differing,
    idle_latency_ms,
    load,
    mixed,
    percentile,
)
from benchmarks.tables import format_table
from benchmarks.workers import ROOT
from seq2seq.commands.engines import choose_engine
from seq2seq.data.textio import read_lines
from seq2seq.translate.engine import Engine
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator

SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)/")
LINES_PER_CLIENT = 100  # a load phase sends at most this many lines per client
PRECISION_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
DEFAULT = "default"  # the server started without engine flags; the others are s2s's batchings


@dataclass
class Server:
    name: str  # static or continuous (s2s's decoder), or DEFAULT
    process: subprocess.Popen
    port: int

    @property
    def engine(self) -> str:
        """The offline engine it is measured against: s2s, or DEFAULT."""
        return DEFAULT if self.name == DEFAULT else "s2s"


@dataclass
class Tally:
    """What the rounds gathered for one server at one number of clients."""

    offline: list[float] = field(default_factory=list)  # sent/s of its engine offline, each round
    server: list[float] = field(default_factory=list)  # sent/s of the server, each round
    latencies_ms: list[float] = field(default_factory=list)
    wrong: int = 0
    missing: int = 0

    def add(self, offline_rate: float, result: LoadResult, reference: list[str], sent: int) -> None:
        self.offline.append(offline_rate)
        self.server.append(result.answered / result.seconds)
        self.latencies_ms += result.latencies_ms
        self.wrong += differing(result.answers, reference)
        self.missing += sent - result.answered


@dataclass
class Row:
    """One server at one number of clients."""

    batching: str  # the server: static, continuous or default
    engine: str  # what decodes in it, and offline
    clients: int
    sentences: int
    offline_sent_per_s: float  # medians over the rounds
    server_sent_per_s: float
    ratio: float
    p50_ms: float  # over every round's requests
    p99_ms: float
    idle_ms: float  # one request at a time to an idle server (median)
    wrong: int  # answers that differ from the offline translation, over all rounds
    missing: int  # requests without an answer, over all rounds


def offline(translator: Engine, lines: list[str], beam: int) -> tuple[list[str], float]:
    """Translations of `lines` in one batched call, and its sentences per second."""
    request = Request.of(translator.options(DecodeOverrides(beam=beam)))
    translator.translate(lines[:WARMUP_REQUESTS], request)
    start = time.perf_counter()
    texts = [t.texts[0] for t in translator.translate(lines, request)]
    return texts, len(lines) / (time.perf_counter() - start)


def offline_engines(opts: Options) -> tuple[dict[str, Engine], str | None]:
    """The engines the servers are measured against, and s2s's precision (None where no server runs
    s2s's decoder): s2s's decoder, resolved once as its servers get it, and the default's."""
    assert opts.run_dir is not None  # options.parse insists
    engines: dict[str, Engine] = {}
    precision = None
    if set(opts.batchings) - {DEFAULT}:
        translator = Translator.load(opts.run_dir, placement=Placement("cpu", opts.serve_precision))
        precision = PRECISION_NAMES[translator.dtype or torch.float32]  # the servers run the same
        engines["s2s"] = translator
    if DEFAULT in opts.batchings:
        asked = DecodeOverrides(beam=opts.serve_beam)
        engines[DEFAULT] = choose_engine(Path(opts.run_dir), "auto", asked, Placement("cpu")).engine
    return engines, precision


def start_server(name: str, precision: str | None, opts: Options, threads: int) -> Server:
    """The server `name` on a free port: s2s's decoder at `precision` with that batching, or the
    default (no --engine, --precision or --batching)."""
    assert opts.run_dir is not None
    command = [sys.executable, "-m", "seq2seq", "serve", opts.run_dir, "--host", "127.0.0.1", "--port", "0"]
    command += ["--device", "cpu", "--beam", str(opts.serve_beam), "--threads", str(threads)]
    command += ["--max-lines", str(LONG_LINES), "--batch-window-ms", str(opts.window_ms)]
    if name != DEFAULT:
        command += ["--precision", str(precision), "--batching", name]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stderr is not None
    for line in process.stderr:
        sys.stderr.write(line)
        if found := SERVING.search(line):
            threading.Thread(target=copy_lines, args=(process.stderr,), daemon=True).start()
            return Server(name, process, int(found.group(1)))
    raise RuntimeError(f"the {name} server did not start (exit code {process.wait()})")


def copy_lines(stream: TextIO) -> None:
    """The server's log, passed on to ours."""
    for line in stream:
        sys.stderr.write(line)


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        return "the serve extra is not installed here (pip install -e '.[serve]')"
    return None


def phase_sizes(lines: int, clients: tuple[int, ...]) -> dict[int, int]:
    """Lines sent by each number of clients: LINES_PER_CLIENT each, at most all of them."""
    return {c: min(lines, LINES_PER_CLIENT * c) for c in clients}


def rounds(
    servers: list[Server], engines: dict[str, Engine], lines: list[str], opts: Options
) -> dict[tuple[str, int], Tally]:
    """Each round, each number of clients: each engine offline, then each of its servers loaded."""
    tallies = {(s.name, c): Tally() for s in servers for c in opts.clients}
    for k in range(opts.rounds):
        for clients, size in phase_sizes(len(lines), opts.clients).items():
            for engine, translator in engines.items():
                texts, rate = offline(translator, lines[:size], opts.serve_beam)
                for server in (s for s in servers if s.engine == engine):
                    requests = [[i] for i in range(size)]
                    result = load(server.port, lines, requests, clients, opts.serve_beam, opts.time_limit)
                    tallies[server.name, clients].add(rate, result, texts, size)
                    print(
                        f"round {k + 1}, {clients} clients: {engine} offline {rate:.1f} sent/s, "
                        f"{server.name} server {tallies[server.name, clients].server[-1]:.1f} sent/s",
                        file=sys.stderr,
                    )
    return tallies


def row(server: str, engine: str, clients: int, sentences: int, tally: Tally, idle: float) -> Row:
    offline_rate, rate = statistics.median(tally.offline), statistics.median(tally.server)
    return Row(
        batching=server,
        engine=engine,
        clients=clients,
        sentences=sentences,
        offline_sent_per_s=round(offline_rate, 2),
        server_sent_per_s=round(rate, 2),
        ratio=round(rate / offline_rate, 3),
        p50_ms=round(percentile(tally.latencies_ms, 50), 1),
        p99_ms=round(percentile(tally.latencies_ms, 99), 1),
        idle_ms=round(idle, 1),
        wrong=tally.wrong,
        missing=tally.missing,
    )


def describe(engine: Engine) -> str:
    """`s2s bf16`, `ctranslate2 int8_float32+shortlist`: what decodes, in what."""
    described = engine.describe()
    shortlist = "+shortlist" if described["shortlist"] else ""
    return f"{described['engine']} {described['precision']}{shortlist}"


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Offline and server phases, alternated, on the CPU, with this process's threads."""
    assert opts.run_dir is not None  # options.parse insists
    lines = [line for line in read_lines(opts.src) if line.strip()]
    lines = lines[: opts.limit] if opts.limit else lines
    threads = torch.get_num_threads()
    servers: list[Server] = []
    with tempfile.TemporaryDirectory() as cache, cache_env(Path(cache)):
        engines, precision = offline_engines(opts)
        try:
            for name in opts.batchings:
                servers.append(start_server(name, precision, opts, threads))
            idle = {s.name: idle_latency_ms(s.port, lines, opts.serve_beam) for s in servers}
            tallies = rounds(servers, engines, lines, opts)
            mixes = []
            if opts.mixed_clients:  # its answers are checked against every line its engine translates offline
                references = {name: offline(e, lines, opts.serve_beam)[0] for name, e in engines.items()}
                mixes = [mixed(s.name, s.port, lines, references[s.engine], opts) for s in servers]
        finally:
            for server in servers:
                server.process.send_signal(signal.SIGTERM)
            exit_codes = {s.name: s.process.wait(60) for s in servers}
    kinds = {s.name: describe(engines[s.engine]) for s in servers}
    size = phase_sizes(len(lines), opts.clients)
    rows = [asdict(row(s, kinds[s], c, size[c], tally, idle[s])) for (s, c), tally in tallies.items()]
    return {
        "sentences": len(lines),
        "beam": opts.serve_beam,
        "threads": threads,
        "precision": precision,
        "engines": {name: engine.describe() for name, engine in engines.items()},
        "window_ms": opts.window_ms,
        "rounds": opts.rounds,
        "results": rows,
        "mixed": [asdict(m) for m in mixes],
        "wrong": sum(r["wrong"] for r in rows) + sum(m.wrong for m in mixes),
        "missing": sum(r["missing"] for r in rows) + sum(m.missing for m in mixes),
        "server_exit_codes": exit_codes,
    }


def targets(section: dict[str, Any]) -> dict[str, float]:
    """The serving targets, for continuous batching and the default server where they ran: throughput
    at 32 clients over offline with the same engine (at least 0.85), and the short requests' p99 under
    the mixed load over alone (at most 2)."""
    out = {}
    for r in section["results"]:
        if r["batching"] in ("continuous", DEFAULT) and r["clients"] == 32:
            out[f"serve {r['batching']} / offline, 32 clients, sent/s"] = r["ratio"]
    for m in section["mixed"]:
        if m["batching"] in ("continuous", DEFAULT):
            out[f"serve {m['batching']}, mixed / alone, short p99"] = m["p99_ratio"]
    return out


def report(section: dict[str, Any]) -> str:
    """The load rows, then the mixed rows, as plain-text tables."""
    head = (
        f"== serve: {section['sentences']} lines, beam {section['beam']}, {section['threads']} threads; "
        f"sent/s medians over {section['rounds']} rounds; offline = the server's engine, in this process"
    )
    header = ["server", "engine", "clients", "lines", "offline", "server", "ratio", "p50 ms", "p99 ms"]
    header += ["idle ms", "wrong", "missing"]
    keys = ["batching", "engine", "clients", "sentences", "offline_sent_per_s", "server_sent_per_s", "ratio"]
    keys += ["p50_ms", "p99_ms", "idle_ms", "wrong", "missing"]
    rows = [[str(r[k]) for k in keys] for r in section["results"]]
    parts = [head, format_table(header, rows, left=2)]
    if section["mixed"]:
        header = ["server", "short/long clients", "short p50 alone", "p99 alone", "p50 mixed", "p99 mixed"]
        header += ["p99 ratio", "long requests", "wrong", "missing"]
        keys = ["short_p50_alone_ms", "short_p99_alone_ms", "short_p50_mixed_ms", "short_p99_mixed_ms"]
        keys += ["p99_ratio", "long_requests", "wrong", "missing"]
        rows = [
            [m["batching"], f"{m['short_clients']}/{m['long_clients']}", *(str(m[k]) for k in keys)]
            for m in section["mixed"]
        ]
        parts += [f"mixed: short requests (1 line) alone, then beside long ones ({LONG_LINES} lines)"]
        parts += [format_table(header, rows, left=2)]
    return "\n".join(parts)
