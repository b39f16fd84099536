"""`s2s serve`'s work: a run (or a CTranslate2 export) loaded once, then answered over HTTP until
Ctrl-C or SIGTERM. The server packages are an extra, checked (`seq2seq.serve.server.check_available`)
before the modules that need them are imported; `ServeJob` is plain values, known without them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from seq2seq.commands.engines import choose_engine
from seq2seq.errors import ServeError
from seq2seq.flags import group, option
from seq2seq.run.layout import RUN_DIR
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate.placement import AUTO, Placement

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeJob:
    """What `s2s serve` was asked."""

    run_dir: Path = RUN_DIR()  # or a CTranslate2 export of one
    host: str = option("127.0.0.1", "Address to listen on (0.0.0.0: every interface).")
    port: int = option(8000, "Port (0: a free one, named in the log).", between=(0, 65535))
    settings: ServerSettings = group(ServerSettings())
    placement: Placement = group(AUTO)
    access_log: bool = option(False, "Log every request.", "--verbose", "-v")


def serve(job: ServeJob) -> None:
    """Load JOB's run, then serve it on its host and port (port 0: a free one) until asked to stop."""
    from seq2seq.serve.server import check_available

    check_available()  # before the server packages are imported
    from seq2seq.serve.app import create_app
    from seq2seq.serve.server import listen, url
    from seq2seq.serve.server import run as run_server

    s = job.settings
    if s.batching != "continuous" and s.window_s >= s.limits.timeout_s:
        raise ServeError(
            f"--batch-window-ms {s.batch_window_ms:g}: a request waits a window for others, so every one "
            f"would outlast --timeout {s.limits.timeout_s:g} s; shorten the window"
        )
    chosen = choose_engine(job.run_dir, s.engine, s.asked, job.placement)
    name = job.run_dir.resolve().name
    application = create_app(chosen.engine, s, name, decode_thread=False, running=chosen.own)
    sock = listen(job.host, job.port)
    log.info("serving %s on %s (Ctrl-C stops)", job.run_dir, url(sock))
    run_server(application, sock, job.access_log, s.limits.timeout_s)
    log.info("stopped")
