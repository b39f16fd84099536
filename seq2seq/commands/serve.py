"""`s2s serve`'s work: a run (or a CTranslate2 export) loaded once, then answered over HTTP until
Ctrl-C or SIGTERM. The server packages are an extra, checked (`seq2seq.serve.server.check_available`)
before the modules that need them are imported; `ServeJob` is plain values, known without them."""

from __future__ import annotations

import logging

from seq2seq.commands.engines import choose_engine
from seq2seq.commands.jobs import ServeJob
from seq2seq.errors import ServeError
from seq2seq.translate.casing import Recaser

log = logging.getLogger(__name__)


def serve(job: ServeJob) -> None:
    """Load JOB's run, then serve it on its host and port (port 0: a free one) until asked to stop."""
    from seq2seq.serve.server import check_available

    check_available()  # before the server packages are imported
    s = job.settings
    if s.batching != "continuous" and s.window_s >= s.limits.timeout_s:
        raise ServeError(
            f"--batch-window-ms {s.batch_window_ms:g}: a request waits a window for others, so every one "
            f"would outlast --timeout {s.limits.timeout_s:g} s; shorten the window"
        )
    chosen = choose_engine(job.run_dir, s.engine, s.asked, job.placement)  # the run checked, then loaded
    from seq2seq.serve.app import create_app
    from seq2seq.serve.server import listen, url
    from seq2seq.serve.server import run as run_server

    name = job.run_dir.resolve().name
    recaser = Recaser.of_run(job.run_dir, chosen.engine.tokenizers.src) if s.asked.restore_case else None
    application = create_app(chosen.engine, s, name, decode_thread=False, running=chosen.own, recaser=recaser)
    sock = listen(job.host, job.port)
    log.info("serving %s on %s (Ctrl-C stops)", job.run_dir, url(sock))
    run_server(application, sock, job.access_log, s.limits.timeout_s)
    log.info("stopped")
