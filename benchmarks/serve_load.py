"""The serve section's traffic (serve.py): requests sent to a server from client threads, their
latencies, and the mixed load of short requests beside long ones.

Traffic goes to 127.0.0.1 only; each load phase stops at `--time-limit` seconds.
"""

from __future__ import annotations

import http.client
import itertools
import json
import statistics
import threading
import time
from dataclasses import dataclass

from benchmarks.options import Options

IDLE_REQUESTS = 20
WARMUP_REQUESTS = 8
LONG_LINES = 8  # lines per long request of the mixed load


@dataclass
class LoadResult:
    answered: int  # requests answered
    seconds: float
    latencies_ms: list[float]
    answers: dict[int, str]  # line index -> the translation that came back


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


def mixed(name: str, port: int, lines: list[str], reference: list[str], opts: Options) -> Mixed:
    """Short one-line requests to the server `name` on `port` alone, then while long requests run
    round and round beside them; each answer checked against `reference`, its engine's offline one."""
    short_clients, long_clients = opts.mixed_clients
    by_length = sorted(range(len(lines)), key=lambda i: len(lines[i]))
    quarter = max(1, len(lines) // 4)
    short = [[i] for i in by_length[:quarter]]
    longest = by_length[-quarter:]
    long = [longest[k : k + LONG_LINES] for k in range(0, len(longest), LONG_LINES)]
    alone = load(port, lines, short, short_clients, opts.serve_beam, opts.time_limit)
    stop = threading.Event()
    results: list[LoadResult] = []
    background = threading.Thread(
        target=lambda: results.append(
            load(port, lines, long, long_clients, opts.serve_beam, opts.time_limit, stop)
        )
    )
    background.start()
    time.sleep(0.5)  # the long requests are decoding when the short ones start
    together = load(port, lines, short, short_clients, opts.serve_beam, opts.time_limit)
    stop.set()
    background.join()
    long_load = results[0]
    p99_alone, p99_mixed = percentile(alone.latencies_ms, 99), percentile(together.latencies_ms, 99)
    return Mixed(
        batching=name,
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
