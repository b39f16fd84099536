"""Load test of `s2s serve`: N concurrent clients, one sentence per request, against offline translation.

In one run: the same lines are translated offline (`Translator.translate`, as `s2s translate` does,
timed after the model is loaded; once before and once after the server, and the ratio is taken
against the faster of the two), then a server is started on 127.0.0.1 (a free port) with the same
beam and threads, a few requests warm it up, single requests one at a time give the idle latency,
and N client threads send every line once as its own request, each client waiting for its answer
before sending the next. It prints sentences/s of both and their ratio, latency percentiles, and how
many answers differ from the offline translation or never came. Traffic goes to 127.0.0.1 only;
the load phase stops at `--time-limit` seconds. The `serve` extra must be installed.
"""

from __future__ import annotations

import http.client
import importlib.util
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
from scripts.bench.workers import ROOT
from seq2seq.data.textio import read_lines
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator

SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)/")
IDLE_REQUESTS = 20
WARMUP_REQUESTS = 8


@dataclass
class LoadResult:
    answered: int
    seconds: float
    latencies_ms: list[float]
    answers: dict[int, str]  # line index -> the translation that came back


@dataclass
class Report:
    sentences: int
    clients: int
    beam: int
    threads: int
    window_ms: float
    rounds: int
    offline_sent_per_s: float  # medians over the rounds
    server_sent_per_s: float
    ratio: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    idle_ms: float
    wrong: int  # answers that differ from the offline translation, over all rounds
    missing: int  # requests without an answer, over all rounds
    server_exit_code: int


def offline(translator: Translator, lines: list[str], beam: int) -> tuple[list[str], float]:
    """Translations of `lines` in one batched call, and its sentences per second."""
    settings = translator.options(DecodeOverrides(beam=beam)).search
    budget = translator.config.decode.max_tokens
    translator.translate(lines[:WARMUP_REQUESTS], settings, budget)
    start = time.perf_counter()
    texts = [t.texts[0] for t in translator.translate(lines, settings, budget)]
    return texts, len(lines) / (time.perf_counter() - start)


def start_server(run_dir: Path, beam: int, threads: int, window_ms: float) -> tuple[subprocess.Popen, int]:
    command = [sys.executable, "-m", "seq2seq", "serve", str(run_dir), "--host", "127.0.0.1", "--port", "0"]
    options = ["--device", "cpu", "--beam", str(beam), "--threads", str(threads), "--max-lines", "1"]
    options += ["--batch-window-ms", str(window_ms)]
    server = subprocess.Popen([*command, *options], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert server.stderr is not None
    for line in server.stderr:
        sys.stderr.write(line)
        if found := SERVING.search(line):
            threading.Thread(target=copy_lines, args=(server.stderr,), daemon=True).start()
            return server, int(found.group(1))
    raise RuntimeError(f"the server did not start (exit code {server.wait()})")


def copy_lines(stream: TextIO) -> None:
    """The server's log, passed on to ours."""
    for line in stream:
        sys.stderr.write(line)


def post(connection: http.client.HTTPConnection, line: str, beam: int) -> tuple[int, str]:
    """One request for one line: (HTTP status, the translation or the error)."""
    body = json.dumps({"text": [line], "beam": beam})
    connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = json.loads(response.read())
    return response.status, data["translations"][0] if response.status == 200 else data.get("error", "")


def idle_latency_ms(port: int, lines: list[str], beam: int) -> float:
    """Median latency of single requests sent one at a time to an otherwise idle server."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for line in lines[:WARMUP_REQUESTS]:
        post(connection, line, beam)
    times = []
    for line in lines[:IDLE_REQUESTS]:
        start = time.perf_counter()
        post(connection, line, beam)
        times.append((time.perf_counter() - start) * 1000)
    connection.close()
    return statistics.median(times)


def load(port: int, lines: list[str], clients: int, beam: int, time_limit: float) -> LoadResult:
    """Every line once, by `clients` threads that each wait for an answer before the next request."""
    next_line = iter(range(len(lines)))
    lock = threading.Lock()
    latencies: list[float] = []
    answers: dict[int, str] = {}
    deadline = time.monotonic() + time_limit

    def client() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=time_limit)
        while time.monotonic() < deadline:
            with lock:
                i = next(next_line, None)
            if i is None:
                break
            start = time.perf_counter()
            try:
                status, text = post(connection, lines[i], beam)
            except (OSError, http.client.HTTPException):
                connection.close()
                continue
            with lock:
                latencies.append((time.perf_counter() - start) * 1000)
                if status == 200:
                    answers[i] = text
        connection.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return LoadResult(len(answers), time.perf_counter() - start, latencies, answers)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def missing(opts: Options) -> str | None:
    """Why this section cannot run here, or None."""
    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        return "the serve extra is not installed here (pip install -e '.[serve]')"
    return None


def run(opts: Options, device: torch.device) -> dict[str, Any]:
    """Offline and server rounds, alternated, on the CPU, with this process's threads."""
    assert opts.run_dir is not None  # options.parse insists
    lines = [line for line in read_lines(opts.src) if line.strip()]
    lines = lines[: opts.limit] if opts.limit else lines
    threads = torch.get_num_threads()
    translator = Translator.load(opts.run_dir, placement=Placement("cpu"))
    server, port = start_server(Path(opts.run_dir), opts.serve_beam, threads, opts.window_ms)
    offline_rates, server_rates, latencies, wrong, lost = [], [], [], 0, 0
    try:
        idle = idle_latency_ms(port, lines, opts.serve_beam)
        for k in range(opts.rounds):  # alternated, so a disturbance hits one phase of one round
            reference, offline_rate = offline(translator, lines, opts.serve_beam)
            result = load(port, lines, opts.clients, opts.serve_beam, opts.time_limit)
            offline_rates.append(offline_rate)
            server_rates.append(result.answered / result.seconds)
            latencies += result.latencies_ms
            wrong += sum(1 for i, text in result.answers.items() if text != reference[i])
            lost += len(lines) - result.answered
            print(
                f"round {k + 1}: offline {offline_rate:.2f} sent/s, server {server_rates[-1]:.2f} sent/s",
                file=sys.stderr,
            )
    finally:
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(60)
    offline_rate, rate = statistics.median(offline_rates), statistics.median(server_rates)
    return asdict(
        Report(
            sentences=len(lines),
            clients=opts.clients,
            beam=opts.serve_beam,
            threads=threads,
            window_ms=opts.window_ms,
            rounds=opts.rounds,
            offline_sent_per_s=round(offline_rate, 2),
            server_sent_per_s=round(rate, 2),
            ratio=round(rate / offline_rate, 3),
            p50_ms=round(percentile(latencies, 50), 1),
            p95_ms=round(percentile(latencies, 95), 1),
            p99_ms=round(percentile(latencies, 99), 1),
            idle_ms=round(idle, 1),
            wrong=wrong,
            missing=lost,
            server_exit_code=exit_code,
        )
    )


def report(section: dict[str, Any]) -> str:
    """The report as a two-column markdown table."""
    rows = [f"| {key} | {value} |" for key, value in section.items()]
    return "\n".join(
        [
            "== serve (offline and server sent/s: medians over the rounds)",
            "| what | result |",
            "|---|---|",
            *rows,
        ]
    )
