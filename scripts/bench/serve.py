"""Load test of `s2s serve`: static and continuous batching side by side, at several numbers of
concurrent clients, against offline translation of the same lines; then a mixed load.

In one run: the offline translator is loaded (`Translator.translate`, as `s2s translate` does) and
its precision (`--serve-precision`, auto by default: a timed probe) is resolved once; one server per
`--batching` is started on 127.0.0.1 (a free port) with that precision, the same beam and threads.
A few requests warm each up and single requests sent one at a time give its idle latency. Then, each
round, for each number of clients N: the first 100 x N lines (at most all of them) are translated
offline, timed after the model is loaded, and each server gets every one of those lines once, as its
own request, from N client threads that each wait for an answer before sending the next. Offline and
server phases alternate, so a disturbance hits one phase of one round. It prints sentences/s of both
and their ratio (medians over the rounds), latency percentiles over the rounds, and how many
answers differ from the offline translation or never came.

The mixed load (`--mixed-clients S,L`): S clients send the shortest quarter of the lines, one line
per request, first alone and then while L clients send the longest quarter, 8 lines per request,
round and round. Short requests should not wait for long ones: the p99 latency of the short requests
under the mixed load over their p99 alone is the number to watch (the target: at most 2).

Traffic goes to 127.0.0.1 only; each load phase stops at `--time-limit` seconds. The `serve` extra
must be installed.
"""

from __future__ import annotations

import http.client
import importlib.util
import itertools
import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import torch

from scripts.bench.options import Options
from scripts.bench.tables import format_table
from scripts.bench.workers import ROOT
from seq2seq.data.textio import read_lines
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator

SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)/")
IDLE_REQUESTS = 20
WARMUP_REQUESTS = 8
LINES_PER_CLIENT = 100  # a load phase sends at most this many lines per client
LONG_LINES = 8  # lines per long request of the mixed load
PRECISION_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


@dataclass
class LoadResult:
    answered: int  # requests answered
    seconds: float
    latencies_ms: list[float]
    answers: dict[int, str]  # line index -> the translation that came back


@dataclass
class Server:
    batching: str
    process: subprocess.Popen
    port: int


@dataclass
class Row:
    """One batching at one number of clients."""

    batching: str
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


@dataclass
class Mixed:
    """Short requests alone, then under long ones, on one server."""

    batching: str
    short_clients: int
    long_clients: int
    short_requests: int  # one line each
    short_p50_alone_ms: float
    short_p99_alone_ms: float
    short_p50_mixed_ms: float
    short_p99_mixed_ms: float
    p99_ratio: float  # mixed over alone
    long_requests: int  # answered while the short ones ran, LONG_LINES lines each
    wrong: int
    missing: int


def offline(translator: Translator, lines: list[str], beam: int) -> tuple[list[str], float]:
    """Translations of `lines` in one batched call, and its sentences per second."""
    request = Request.of(translator.options(DecodeOverrides(beam=beam)))
    translator.translate(lines[:WARMUP_REQUESTS], request)
    start = time.perf_counter()
    texts = [t.texts[0] for t in translator.translate(lines, request)]
    return texts, len(lines) / (time.perf_counter() - start)


def start_server(run_dir: Path, batching: str, precision: str, opts: Options, threads: int) -> Server:
    command = [sys.executable, "-m", "seq2seq", "serve", str(run_dir), "--host", "127.0.0.1", "--port", "0"]
    command += ["--device", "cpu", "--precision", precision, "--batching", batching]
    command += ["--beam", str(opts.serve_beam), "--threads", str(threads), "--max-lines", str(LONG_LINES)]
    command += ["--batch-window-ms", str(opts.window_ms)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stderr is not None
    for line in process.stderr:
        sys.stderr.write(line)
        if found := SERVING.search(line):
            threading.Thread(target=copy_lines, args=(process.stderr,), daemon=True).start()
            return Server(batching, process, int(found.group(1)))
    raise RuntimeError(f"the {batching} server did not start (exit code {process.wait()})")


def copy_lines(stream: TextIO) -> None:
    """The server's log, passed on to ours."""
    for line in stream:
        sys.stderr.write(line)


def post(connection: http.client.HTTPConnection, lines: list[str], beam: int) -> tuple[int, list[str]]:
    """One request: (HTTP status, the translations, or the error as the one item)."""
    body = json.dumps({"text": lines, "beam": beam})
    connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = json.loads(response.read())
    return response.status, data["translations"] if response.status == 200 else [data.get("error", "")]


def idle_latency_ms(port: int, lines: list[str], beam: int) -> float:
    """Median latency of single requests sent one at a time to an otherwise idle server."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for line in lines[:WARMUP_REQUESTS]:
        post(connection, [line], beam)
    times = []
    for line in lines[:IDLE_REQUESTS]:
        start = time.perf_counter()
        post(connection, [line], beam)
        times.append((time.perf_counter() - start) * 1000)
    connection.close()
    return statistics.median(times)


def load(
    port: int,
    lines: list[str],
    requests: list[list[int]],
    clients: int,
    beam: int,
    time_limit: float,
    until: threading.Event | None = None,
) -> LoadResult:
    """`requests` (each a list of line indices) sent once each by `clients` threads that each wait for
    an answer before sending the next; with `until`, sent round and round until it is set."""
    order = itertools.count()
    lock = threading.Lock()
    latencies: list[float] = []
    answers: dict[int, str] = {}
    answered = 0
    deadline = time.monotonic() + time_limit

    def next_request() -> list[int] | None:
        with lock:
            n = next(order)
        if until is not None:
            return None if until.is_set() else requests[n % len(requests)]
        return requests[n] if n < len(requests) else None

    def client() -> None:
        nonlocal answered
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=time_limit)
        while time.monotonic() < deadline and (request := next_request()) is not None:
            start = time.perf_counter()
            try:
                status, texts = post(connection, [lines[i] for i in request], beam)
            except (OSError, http.client.HTTPException):
                connection.close()
                continue
            with lock:
                latencies.append((time.perf_counter() - start) * 1000)
                if status == 200:
                    answered += 1
                    answers.update(zip(request, texts, strict=True))
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return LoadResult(answered, time.perf_counter() - start, latencies, answers)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def differing(answers: dict[int, str], reference: list[str]) -> int:
    return sum(1 for i, text in answers.items() if text != reference[i])


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        return "the serve extra is not installed here (pip install -e '.[serve]')"
    return None


def mixed(server: Server, lines: list[str], reference: list[str], opts: Options) -> Mixed:
    """Short one-line requests alone, then while long requests run round and round beside them."""
    short_clients, long_clients = opts.mixed_clients
    by_length = sorted(range(len(lines)), key=lambda i: len(lines[i]))
    quarter = max(1, len(lines) // 4)
    short = [[i] for i in by_length[:quarter]]
    longest = by_length[-quarter:]
    long = [longest[k : k + LONG_LINES] for k in range(0, len(longest), LONG_LINES)]
    alone = load(server.port, lines, short, short_clients, opts.serve_beam, opts.time_limit)
    stop = threading.Event()
    results: list[LoadResult] = []
    background = threading.Thread(
        target=lambda: results.append(
            load(server.port, lines, long, long_clients, opts.serve_beam, opts.time_limit, stop)
        )
    )
    background.start()
    time.sleep(0.5)  # the long requests are decoding when the short ones start
    together = load(server.port, lines, short, short_clients, opts.serve_beam, opts.time_limit)
    stop.set()
    background.join()
    long_load = results[0]
    p99_alone, p99_mixed = percentile(alone.latencies_ms, 99), percentile(together.latencies_ms, 99)
    return Mixed(
        batching=server.batching,
        short_clients=short_clients,
        long_clients=long_clients,
        short_requests=len(short),
        short_p50_alone_ms=round(percentile(alone.latencies_ms, 50), 1),
        short_p99_alone_ms=round(p99_alone, 1),
        short_p50_mixed_ms=round(percentile(together.latencies_ms, 50), 1),
        short_p99_mixed_ms=round(p99_mixed, 1),
        p99_ratio=round(p99_mixed / p99_alone, 2),
        long_requests=long_load.answered,
        wrong=differing(alone.answers | together.answers | long_load.answers, reference),
        missing=2 * len(short) - alone.answered - together.answered,
    )


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Offline and server phases, alternated, on the CPU, with this process's threads."""
    assert opts.run_dir is not None  # options.parse insists
    lines = [line for line in read_lines(opts.src) if line.strip()]
    lines = lines[: opts.limit] if opts.limit else lines
    threads = torch.get_num_threads()
    translator = Translator.load(opts.run_dir, placement=Placement("cpu", opts.serve_precision))
    precision = PRECISION_NAMES[translator.dtype or torch.float32]  # the server runs the same
    servers: list[Server] = []
    try:
        for batching in opts.batchings:
            servers.append(start_server(Path(opts.run_dir), batching, precision, opts, threads))
        idle = {s.batching: idle_latency_ms(s.port, lines, opts.serve_beam) for s in servers}
        sizes = {c: min(len(lines), LINES_PER_CLIENT * c) for c in opts.clients}
        offline_rates: dict[int, list[float]] = {c: [] for c in opts.clients}
        rates = {(s.batching, c): [] for s in servers for c in opts.clients}
        latencies: dict[tuple[str, int], list[float]] = {key: [] for key in rates}
        wrong, lost = dict.fromkeys(rates, 0), dict.fromkeys(rates, 0)
        for k in range(opts.rounds):
            for clients, size in sizes.items():
                texts, rate = offline(translator, lines[:size], opts.serve_beam)
                offline_rates[clients].append(rate)
                requests = [[i] for i in range(size)]
                for server in servers:
                    result = load(server.port, lines, requests, clients, opts.serve_beam, opts.time_limit)
                    key = (server.batching, clients)
                    rates[key].append(result.answered / result.seconds)
                    latencies[key] += result.latencies_ms
                    wrong[key] += differing(result.answers, texts)
                    lost[key] += size - result.answered
                    print(
                        f"round {k + 1}, {clients} clients: offline {rate:.1f} sent/s, "
                        f"{server.batching} server {rates[key][-1]:.1f} sent/s",
                        file=sys.stderr,
                    )
        mixes: list[Mixed] = []
        if opts.mixed_clients:  # its answers are checked against every line translated offline
            reference = offline(translator, lines, opts.serve_beam)[0]
            mixes = [mixed(s, lines, reference, opts) for s in servers]
    finally:
        for server in servers:
            server.process.send_signal(signal.SIGTERM)
        exit_codes = {s.batching: s.process.wait(60) for s in servers}
    rows = []
    for (batching, clients), server_rates in rates.items():
        offline_rate, rate = statistics.median(offline_rates[clients]), statistics.median(server_rates)
        row = Row(
            batching=batching,
            clients=clients,
            sentences=sizes[clients],
            offline_sent_per_s=round(offline_rate, 2),
            server_sent_per_s=round(rate, 2),
            ratio=round(rate / offline_rate, 3),
            p50_ms=round(percentile(latencies[batching, clients], 50), 1),
            p99_ms=round(percentile(latencies[batching, clients], 99), 1),
            idle_ms=round(idle[batching], 1),
            wrong=wrong[batching, clients],
            missing=lost[batching, clients],
        )
        rows.append(asdict(row))
    return {
        "sentences": len(lines),
        "beam": opts.serve_beam,
        "threads": threads,
        "precision": precision,
        "window_ms": opts.window_ms,
        "rounds": opts.rounds,
        "results": rows,
        "mixed": [asdict(m) for m in mixes],
        "wrong": sum(r["wrong"] for r in rows) + sum(m.wrong for m in mixes),
        "missing": sum(r["missing"] for r in rows) + sum(m.missing for m in mixes),
        "server_exit_codes": exit_codes,
    }


def targets(section: dict[str, Any]) -> dict[str, float]:
    """Issue 28's serving targets, for continuous batching where it ran: throughput at 32 clients over
    offline (at least 0.85), and the short requests' p99 under the mixed load over alone (at most 2)."""
    out = {}
    for row in section["results"]:
        if row["batching"] == "continuous" and row["clients"] == 32:
            out["serve continuous / offline, 32 clients, sent/s"] = row["ratio"]
    for m in section["mixed"]:
        if m["batching"] == "continuous":
            out["serve continuous, mixed / alone, short p99"] = m["p99_ratio"]
    return out


def report(section: dict[str, Any]) -> str:
    """The load rows, then the mixed rows, as plain-text tables."""
    head = (
        f"== serve: {section['sentences']} lines, beam {section['beam']}, {section['precision']}, "
        f"{section['threads']} threads; sent/s medians over {section['rounds']} rounds"
    )
    header = ["batching", "clients", "lines", "offline", "server", "ratio", "p50 ms", "p99 ms", "idle ms"]
    header += ["wrong", "missing"]
    keys = ["batching", "clients", "sentences", "offline_sent_per_s", "server_sent_per_s", "ratio", "p50_ms"]
    keys += ["p99_ms", "idle_ms", "wrong", "missing"]
    rows = [[str(r[k]) for k in keys] for r in section["results"]]
    parts = [head, format_table(header, rows, left=1)]
    if section["mixed"]:
        header = ["batching", "short/long clients", "short p50 alone", "p99 alone", "p50 mixed", "p99 mixed"]
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
