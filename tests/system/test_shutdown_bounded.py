"""Every shutdown is bounded: SIGTERM ends `s2s serve` within seconds whatever its clients do. A request
that has arrived is answered; one still arriving (half its headers, half its body, a chunked body
without its last chunk) is dropped, never handled; an idle keep-alive connection is closed."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx2
import pytest

from tests.helpers import cli_translate
from tests.servers import ServerProcess, request_in_flight

pytest.importorskip("uvicorn", reason="s2s serve is an optional extra: s2s[serve]")

STOP_WITHIN_S = 10.0  # the in-flight request's 1.5 s batching window and its decoding included
LINES = ["red cat runs", "", "the big dog sleeps under a tree"]
BODY = b'{"text": ["red cat"]}'  # valid JSON: a server that handled a cut body would answer it
HEAD = b"POST /translate HTTP/1.1\r\nHost: s2s\r\nContent-Type: application/json\r\n"
# what each client has sent when the server stops, and whether the app has its request (then its
# answer is 503) or not yet (uvicorn closes the connection)
STALLS = {
    "half the headers": (HEAD, False),
    "half the body": (HEAD + b"Content-Length: %d\r\n\r\n" % (len(BODY) + 40) + BODY, True),
    "a chunk short": (HEAD + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(BODY) + BODY + b"\r\n", True),
    "nothing yet": (b"", False),
}


def stalled_client(address: tuple[str, int], sent: bytes) -> socket.socket:
    client = socket.create_connection(address)
    client.sendall(sent)
    return client


def what_it_got(client: socket.socket) -> bytes:
    """Everything the server sent to `client` until it closed the connection."""
    client.settimeout(STOP_WITHIN_S)
    received = b""
    while chunk := client.recv(65536):
        received += chunk
    client.close()
    return received


@pytest.mark.slow
def test_sigterm_ends_the_server_within_seconds_with_stalled_clients(served_run: Path):
    server = ServerProcess(served_run, "--batch-window-ms", "1500")
    address = (urlparse(server.url).hostname, urlparse(server.url).port)
    keep_alive = httpx2.Client(timeout=30)
    assert keep_alive.get(f"{server.url}/health").status_code == 200  # its connection stays open
    stalled = {name: stalled_client(address, sent) for name, (sent, _) in STALLS.items()}
    time.sleep(0.3)  # for the server to read what they sent
    request, answer = request_in_flight(server, LINES)  # held for the 1.5 s batch window

    start = time.monotonic()
    assert server.stop(signal.SIGTERM, timeout=60) == 0, "".join(server.log)
    assert time.monotonic() - start < STOP_WITHIN_S, "".join(server.log)
    request.join()
    assert answer[0].status_code == 200 and answer[0].json()["translations"] == cli_translate(
        served_run, LINES
    )
    for name, client in stalled.items():
        got, handed_over = what_it_got(client), STALLS[name][1]
        assert got.startswith(b"HTTP/1.1 503 ") if handed_over else got == b"", f"{name}: {got[:200]!r}"
        assert (
            got.endswith(b'{"error": "the server is stopping; the request did not arrive in full"}')
            or not got
        )
    keep_alive.close()
