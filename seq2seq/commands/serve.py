"""`s2s serve`'s work: a run (or a CTranslate2 export) loaded once, then answered over HTTP until
Ctrl-C or SIGTERM. The server packages are an extra: the caller checks them first
(`seq2seq.serve.server.check_available`), before this module imports them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from seq2seq.commands.engines import choose_engine
from seq2seq.errors import ServeError
from seq2seq.serve.app import ServerSettings, create_app
from seq2seq.serve.server import listen, url
from seq2seq.serve.server import run as run_server
from seq2seq.translate.placement import AUTO, Placement

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeJob:
    """What `s2s serve` was asked, besides where it listens."""

    run_dir: Path  # a run, or a CTranslate2 export of one
    settings: ServerSettings
    placement: Placement = AUTO


def serve(job: ServeJob, host: str, port: int, access_log: bool = False) -> None:
    """Load JOB's run, then serve it on host:port (port 0: a free one) until asked to stop."""
    s = job.settings
    if s.batching != "continuous" and s.window_s >= s.limits.timeout_s:
        raise ServeError(
            f"--batch-window-ms {s.window_s * 1000:g}: a request waits a window for others, so every one "
            f"would outlast --timeout {s.limits.timeout_s:g} s; shorten the window"
        )
    chosen = choose_engine(job.run_dir, s.engine, s.asked, job.placement)
    name = job.run_dir.resolve().name
    application = create_app(chosen.engine, s, name, decode_thread=False, running=chosen.own)
    sock = listen(host, port)
    log.info("serving %s on %s (Ctrl-C stops)", job.run_dir, url(sock))
    run_server(application, sock, access_log, s.limits.timeout_s)
    log.info("stopped")
