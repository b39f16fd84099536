"""Running `s2s serve`: the listening socket, uvicorn, and a graceful end on SIGINT or SIGTERM.

The server packages are optional (`pip install 's2s[serve]'`) and imported only here and in `api`.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from typing import TYPE_CHECKING

from seq2seq.errors import ServeError

if TYPE_CHECKING:
    from fastapi import FastAPI


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


def run(app: FastAPI, sock: socket.socket, access_log: bool) -> None:
    """Serve until SIGINT or SIGTERM; then stop accepting, let in-flight requests finish, and return.

    HTTP runs on a second thread, and the model decodes on this one, the thread that loaded it (see
    `Batcher`): `app` must come from `create_app(..., decode_thread=False)`.
    """
    import uvicorn

    batcher = app.state.batcher
    config = uvicorn.Config(
        app,
        log_level=logging.INFO if access_log else logging.WARNING,
        access_log=access_log,
        timeout_graceful_shutdown=None,  # in-flight requests finish, however long they take
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
