"""How a command ends: a user's mistake is one `error:` line on stderr and code 2, an interrupt code
130, a reader that went away the quiet end of a Unix tool (the codes: `seq2seq.errors`)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from collections.abc import Iterator
from typing import NoReturn

import typer

from seq2seq.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USER_ERROR, Seq2SeqError


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn user mistakes into one line on stderr and exit code 2; Ctrl-C or SIGTERM into code 130.

    A reader that stops reading (`s2s translate ... | head -1`) ends the command quietly, like a
    Unix tool. SIGTERM raises KeyboardInterrupt, so outputs in progress are discarded, not left half
    written.
    """
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    except Seq2SeqError as e:
        fail(str(e))
    except OSError as e:  # files the user named: unreadable, unwritable, missing directory
        if e.errno == errno.EPIPE:  # BrokenPipeError: whoever read stdout has gone
            silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        fail(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else ""))
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def fail(message: str) -> NoReturn:
    """`error: MESSAGE` on stderr, and the command ends with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USER_ERROR) from None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise the output error again."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
