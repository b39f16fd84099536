"""Ctrl-C and SIGTERM during training: finish the step, save, stop."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)


class StopRequest:
    """Turns the first Ctrl-C (SIGINT) or SIGTERM into a flag the loop checks after each step.

    torchrun forwards Ctrl-C to its workers as SIGTERM, so both mean "save and stop".
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        def handler(signum: int, frame: Any) -> None:
            log.warning("interrupt received: saving a checkpoint after this step (Ctrl-C again to abort)")
            self.requested = True
            signal.signal(signal.SIGINT, signal.default_int_handler)

        previous = {sig: signal.signal(sig, handler) for sig in self.SIGNALS}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
