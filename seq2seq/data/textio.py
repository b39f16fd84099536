"""Lines of text in and out: strict UTF-8, split on '\\n' only, so line N out always matches line N in.

(`str.splitlines` also splits on characters such as U+2028 or form feed, which would silently
shift the alignment of a parallel corpus or of a translation.) Text is checked, not guessed: a UTF-8
byte-order mark at the start of a file is dropped (editors on Windows write one), and a NUL byte is
an error naming the line, since it means the file is not UTF-8 text (UTF-16 without a BOM decodes
as "valid" UTF-8 full of NULs).
"""

from __future__ import annotations

import io
import os
import select
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from seq2seq.errors import DataError

BOM = "\ufeff"


def split_lines(raw: bytes, where: str, first_line: int = 1) -> list[str]:
    """Decode complete '\\n'-terminated (or final) lines; invalid UTF-8 or a NUL byte names the line.

    `first_line` is the number of the first line in `raw`; when it is 1, a leading BOM is dropped.
    """
    nul = raw.find(b"\0")
    if nul >= 0:
        raise _nul_error(where, first_line + raw.count(b"\n", 0, nul))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + raw.count(b"\n", 0, e.start)
        raise DataError(f"{where}: line {line} is not valid UTF-8") from None
    if first_line == 1:
        text = text.removeprefix(BOM)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def read_lines(path: str | Path) -> list[str]:
    """All lines of a UTF-8 text file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    return split_lines(raw, str(path))


def stream_line_chunks(stream: BinaryIO, where: str, max_bytes: int = 1 << 17) -> Iterator[list[str]]:
    """Lines from a binary stream, yielded as soon as they arrive, in chunks of what is available.

    A line typed at a terminal is yielded at once; a large piped file arrives in big chunks, which
    keeps batches full. The last line may lack its '\n'. A stream without a file descriptor (an
    in-memory buffer) is read whole.
    """
    try:
        fd = stream.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        lines = split_lines(stream.read(), where)
        if lines:
            yield lines
        return
    yield from _complete_lines(_available_blocks(fd, max_bytes), where)


def iter_line_chunks(path: str | Path, block: int = 1 << 20) -> Iterator[list[str]]:
    """The lines of a UTF-8 text file in chunks of about `block` bytes: never the whole file at once."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            yield from _complete_lines(iter(lambda: f.read(block), b""), str(path))
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None


def count_lines(path: str | Path, block: int = 1 << 20) -> int:
    """Lines in a file, as `split_lines` counts them (a last line without '\n' counts), streamed."""
    path = Path(path)
    count, last = 0, b"\n"
    try:
        with path.open("rb") as f:
            while data := f.read(block):
                if (nul := data.find(b"\0")) >= 0:  # UTF-16 text has one in every character
                    raise _nul_error(str(path), count + data.count(b"\n", 0, nul) + 1)
                count += data.count(b"\n")
                last = data[-1:]
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    return count + (last != b"\n")


def _nul_error(where: str, line: int) -> DataError:
    return DataError(
        f"{where}: line {line} contains a NUL byte; this is not UTF-8 text "
        "(UTF-16? convert it with: iconv -f UTF-16 -t UTF-8)"
    )


def _available_blocks(fd: int, max_bytes: int) -> Iterator[bytes]:
    """What a file descriptor has to read now, up to about `max_bytes` at a time, until EOF."""
    while data := os.read(fd, 1 << 16):
        while len(data) < max_bytes and select.select([fd], [], [], 0)[0]:
            more = os.read(fd, 1 << 16)
            if not more:
                break
            data += more
        yield data


def _complete_lines(blocks: Iterator[bytes], where: str) -> Iterator[list[str]]:
    """The complete lines in each block as it arrives (a line split across blocks waits for its end)."""
    pending = b""
    line_no = 1
    for data in blocks:
        pending += data
        cut = pending.rfind(b"\n") + 1
        if cut:
            lines = split_lines(pending[:cut], where, line_no)
            line_no += len(lines)
            pending = pending[cut:]
            yield lines
    if pending:
        yield split_lines(pending, where, line_no)
