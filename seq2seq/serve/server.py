"""Running `s2s serve`: the listening socket, uvicorn, and a graceful end on SIGINT or SIGTERM.

The end is bounded: requests that have arrived are answered (each within the server's --timeout),
a request still arriving is dropped at once (`DropUnfinished`), and whatever is left after the
timeout and `DRAIN_GRACE_S` more (a client that does not read its answer) is cancelled.
The server packages are optional (`pip install 's2s[serve]'`) and imported only here and in `api`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from seq2seq.errors import ServeError

if TYPE_CHECKING:
    from fastapi import FastAPI

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

DRAIN_GRACE_S = 5.0  # after the request timeout, for answers still being written to slow readers
STOP_POLL_S = 0.1  # how often a request still arriving looks whether the server is stopping


def check_available() -> None:
    """Fail with the install command, before the model loads, when the server packages are missing."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ServeError("s2s serve needs fastapi and uvicorn: pip install 's2s[serve]'") from None


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one), or an error that says what to change."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ServeError(f"--host {host}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {e.strerror}; choose another --port") from None
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def run(app: FastAPI, sock: socket.socket, access_log: bool, timeout_s: float) -> None:
    """Serve until SIGINT or SIGTERM; then stop accepting, answer the requests that have arrived
    (`timeout_s`: the server's --timeout, the longest any waits), drop those still arriving, and return.

    HTTP runs on a second thread, and the model decodes on this one, the thread that loaded it (see
    `Batcher`): `app` must come from `create_app(..., decode_thread=False)`.
    """
    import uvicorn

    batcher = app.state.batcher
    server: uvicorn.Server
    config = uvicorn.Config(
        DropUnfinished(app, lambda: server.should_exit),
        log_level=logging.INFO if access_log else logging.WARNING,
        access_log=access_log,
        # every request that has arrived is answered within `timeout_s` (or gets 408); uvicorn types
        # this an int, but its server hands it to `asyncio.timeout`, which takes any seconds
        timeout_graceful_shutdown=timeout_s + DRAIN_GRACE_S,  # type: ignore[arg-type]
    )
    # off the main thread, uvicorn leaves signals alone (it would re-raise them once stopped, ending
    # the process as interrupted): here a signal asks it to stop, and stopping cleanly exits 0
    server = uvicorn.Server(config)

    def serve_http() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            batcher.close()  # also when uvicorn could not start

    def stop(signum: int, frame: object) -> None:
        server.force_exit = server.should_exit  # a second Ctrl-C stops without waiting
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    http = threading.Thread(target=serve_http, name="s2s-http")
    try:
        http.start()
        batcher.run()
        http.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not server.started:
        raise ServeError("the server could not start; the log above says why")


class _Dropped(BaseException):
    """A request dropped while it arrived: a BaseException, as a cancellation is, so that no error
    handler of the app's answers it with a 500."""


class DropUnfinished:
    """ASGI middleware: once the server is stopping (`stopping()`), a request whose body has not all
    arrived is not read further nor handled: it gets 503 and its connection closes (uvicorn closes
    every connection once it stops). A request that has arrived goes on to its answer.

    Without it, a client that sent half a request and waits would keep the server from ever ending.
    """

    def __init__(self, app: ASGIApp, stopping: Callable[[], bool]) -> None:
        self.app, self.stopping = app, stopping

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived, started = False, False

        async def receive_unless_stopping() -> Message:
            nonlocal arrived
            if arrived:
                return await receive()
            message = asyncio.ensure_future(receive())
            try:
                while not (await asyncio.wait({message}, timeout=STOP_POLL_S))[0]:
                    if self.stopping():
                        raise _Dropped
            finally:
                message.cancel()  # if it has not come: nothing more is read
            result = message.result()
            arrived = result["type"] != "http.request" or not result.get("more_body", False)
            return result

        async def send_noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive_unless_stopping, send_noting_start)
        except _Dropped:
            if not started:
                await _send_error(send, 503, "the server is stopping; the request did not arrive in full")


async def _send_error(send: Send, status: int, error: str) -> None:
    """A JSON error answer ({"error": ...}, as the app's), and the end of the connection."""
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": [*headers, (b"connection", b"close")]}
    )
    await send({"type": "http.response.body", "body": body})
