"""A real `s2s serve` process for tests: started on a free port, stopped by a signal."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2

SERVING = re.compile(r"serving .* on (http://\S+)")


class ServerProcess:
    """`python -m seq2seq serve RUN_DIR --port 0 ARGS`; `url` is the address it logged."""

    def __init__(self, run_dir: Path, *args: str, timeout: float = 60.0) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "seq2seq", "serve", str(run_dir), "--port", "0", "--device", "cpu"]
        self.process = subprocess.Popen(
            [*command, *args], stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env
        )
        self.log: list[str] = []
        self._ready = threading.Event()
        self.url = ""
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self._ready.wait(timeout) or not self.url:
            self.process.kill()
            raise RuntimeError("the server did not start:\n" + "".join(self.log))

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)
            found = SERVING.search(line)
            if found:
                self.url = found.group(1).rstrip("/")
                self._ready.set()
        self._ready.set()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig`, wait for the process to end; its exit code."""
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def request_in_flight(server: ServerProcess, lines: list[str]) -> tuple[threading.Thread, list]:
    """POST `lines` to /translate from a thread and return once the server holds the request (its
    /health counts it); the thread, and the list its response lands in."""
    answer: list[httpx2.Response] = []
    request = threading.Thread(
        target=lambda: answer.append(httpx2.post(f"{server.url}/translate", json={"text": lines}, timeout=30))
    )
    request.start()
    while httpx2.get(f"{server.url}/health").json()["requests"] == 0 and request.is_alive():
        time.sleep(0.02)
    return request, answer
