"""One command of a step as its own process, its output shown as it comes and kept in the step's log.

The process's stdout and stderr are one stream, copied to this process's stderr as they arrive (its
progress bars too) and to the log, where a progress bar keeps only its last state (what a `\\r`
overwrote is left out). Ctrl-C or SIGTERM here stops the process the way they stop s2s (SIGTERM:
`s2s train` saves its last checkpoint) before this one stops.
"""

from __future__ import annotations

import codecs
import signal
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from seq2seq.errors import EXIT_INTERRUPTED, Seq2SeqError
from seq2seq.pipeline.command import Command


class CommandFailed(Seq2SeqError):
    """A step's command exited with an error."""


def run_logged(command: Command, log_file: Path) -> None:
    """Run `command`, its output shown and appended to `log_file`; an exit code but 0 raises
    `CommandFailed` naming the log (130: KeyboardInterrupt, as s2s was interrupted)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as log:
        log.write(f"$ {command.shown()}\n")
        log.flush()
        process = subprocess.Popen(command.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            _copy(process, log)
            code = process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGTERM)
            process.wait()
            raise
        log.write(f"(exit code {code})\n")
    if code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if code != 0:
        raise CommandFailed(f"`{command.shown()}` exited with code {code}; what it printed is in {log_file}")


def _copy(process: subprocess.Popen[bytes], log: TextIO) -> None:
    """The process's output, as it comes, to stderr (whole) and to `log` (lines, bars at their end)."""
    assert process.stdout is not None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    line = ""
    while chunk := process.stdout.read1(1 << 16):  # type: ignore[attr-defined]
        text = decoder.decode(chunk)
        sys.stderr.write(text)
        sys.stderr.flush()
        *done, line = (line + text).split("\n")
        log.writelines(part.rsplit("\r", 1)[-1] + "\n" for part in done)
    if line:
        log.write(line.rsplit("\r", 1)[-1] + "\n")
