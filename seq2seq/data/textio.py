"""Lines of text in and out: strict UTF-8, split on '\\n' only, so line N out always matches line N in.

(`str.splitlines` also splits on characters such as U+2028 or form feed, which would silently
shift the alignment of a parallel corpus or of a translation.) Text is checked, not guessed: a UTF-8
byte-order mark at the start of a file is dropped (editors on Windows write one), and a NUL byte is
an error naming the line, since it means the file is not UTF-8 text (UTF-16 without a BOM decodes
as "valid" UTF-8 full of NULs).

Files may be compressed (gzip, xz, bzip2, zstd: `seq2seq.data.compression`): they are decompressed
while read, and line numbers are those of the decompressed text.

Every reader here is bounded by the line, not the stream: a line longer than `MAX_LINE_BYTES` is an
error naming it once that many bytes have been read without a '\n' (a file without line breaks,
binary data, `/dev/zero`), while a stream of any number of lines is read in bounded blocks.
"""

from __future__ import annotations

import io
import os
import select
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from hashlib import _Hash as Hash

from seq2seq.data.compression import open_binary
from seq2seq.errors import DataError

BOM = "\ufeff"
MAX_LINE_BYTES = 1 << 20  # no sentence is this long; what is, is not one-sentence-per-line text
BLOCK = 1 << 20  # bytes read from a file at a time


def split_lines(raw: bytes, where: str, first_line: int = 1) -> list[str]:
    """Decode complete '\\n'-terminated (or final) lines; invalid UTF-8, a NUL byte or a line over
    `MAX_LINE_BYTES` names the line.

    `first_line` is the number of the first line in `raw`; when it is 1, a leading BOM is dropped.
    """
    nul = raw.find(b"\0")
    if nul >= 0:
        raise _nul_error(where, first_line + raw.count(b"\n", 0, nul))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        number = first_line + raw.count(b"\n", 0, e.start)
        raise DataError(f"{where}: line {number} is not valid UTF-8") from None
    if first_line == 1:
        text = text.removeprefix(BOM)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(raw) > MAX_LINE_BYTES and max(map(len, lines)) > MAX_LINE_BYTES // 4:  # else none can be
        for i, line in enumerate(lines):
            if len(line) > MAX_LINE_BYTES // 4 and len(line.encode("utf-8")) > MAX_LINE_BYTES:
                raise _too_long_error(where, first_line + i)
    return [line.rstrip("\r") for line in lines]


def read_lines(path: str | Path, digest: Hash | None = None) -> list[str]:
    """All lines of a UTF-8 text file, read in blocks; `digest` (a hashlib object) sees every byte."""
    return [line for chunk in iter_line_chunks(path, digest=digest) for line in chunk]


def stream_line_chunks(stream: BinaryIO, where: str, max_bytes: int = 1 << 17) -> Iterator[list[str]]:
    """Lines from a binary stream, yielded as soon as they arrive, in chunks of what is available.

    A line typed at a terminal is yielded at once; a large piped file arrives in big chunks, which
    keeps batches full. The last line may lack its '\n'. A stream without a file descriptor (an
    in-memory buffer) is read in blocks of `max_bytes`.
    """
    try:
        fd = stream.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        yield from _complete_lines(iter(lambda: stream.read(max_bytes), b""), where)
        return
    yield from _complete_lines(_available_blocks(fd, max_bytes), where)


def iter_line_chunks(path: str | Path, block: int = BLOCK, digest: Hash | None = None) -> Iterator[list[str]]:
    """The lines of a UTF-8 text file in chunks of about `block` bytes: never the whole file at once.

    `digest` (a hashlib object), when given, is updated with every byte of the file as it is stored
    (compressed or not).
    """
    path = Path(path)
    try:
        with open_binary(path, digest) as f:
            yield from _complete_lines(iter(lambda: f.read(block), b""), str(path))
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None


def count_lines(path: str | Path, block: int = BLOCK) -> int:
    """Lines in a file, as `split_lines` counts them (a last line without '\n' counts), streamed.

    A NUL byte, or more than `MAX_LINE_BYTES` without a '\n', is an error as soon as it is read.
    """
    path = Path(path)
    count, open_line = 0, 0  # open_line: bytes read of the line not yet ended
    block = min(block, MAX_LINE_BYTES)  # so a line inside one block is never too long
    try:
        with open_binary(path) as f:
            while data := f.read(block):
                if (nul := data.find(b"\0")) >= 0:  # UTF-16 text has one in every character
                    raise _nul_error(str(path), count + data.count(b"\n", 0, nul) + 1)
                if (first := data.find(b"\n")) >= 0:
                    if open_line + first > MAX_LINE_BYTES:
                        raise _too_long_error(str(path), count + 1)
                    open_line = len(data) - data.rfind(b"\n") - 1
                else:
                    open_line += len(data)
                count += data.count(b"\n")
                if open_line > MAX_LINE_BYTES:
                    raise _too_long_error(str(path), count + 1)
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    return count + (open_line > 0)


def _nul_error(where: str, line: int) -> DataError:
    return DataError(
        f"{where}: line {line} contains a NUL byte; this is not UTF-8 text "
        "(UTF-16? convert it with: iconv -f UTF-16 -t UTF-8)"
    )


def _too_long_error(where: str, line: int) -> DataError:
    return DataError(
        f"{where}: line {line} is longer than {MAX_LINE_BYTES:,} bytes; s2s reads one sentence per "
        "line: is this text with '\\n' line breaks?"
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
    """The complete lines in each block as it arrives (a line split across blocks waits for its end,
    but no longer than `MAX_LINE_BYTES`)."""
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
        if len(pending) > MAX_LINE_BYTES:
            if b"\0" in pending:
                raise _nul_error(where, line_no)
            raise _too_long_error(where, line_no)
    if pending:
        yield split_lines(pending, where, line_no)


class LinesInStep:
    """A file's lines taken in step with another stream's: `take(n)` gives its next `n` lines, read in
    blocks as they are needed; `finish()` checks that none is left. What `s2s translate --prefix`
    reads beside its input, one line for each input line."""

    def __init__(self, path: Path, option: str) -> None:
        self.path, self.option = path, option
        self._chunks = iter_line_chunks(path)
        self._ahead: list[str] = []
        self._given = 0  # lines taken so far

    def take(self, n: int) -> list[str]:
        while len(self._ahead) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                raise DataError(
                    f"{self.option} {self.path} has {self._given + len(self._ahead)} lines and the input "
                    "more: give one line for each input line"
                )
            self._ahead += chunk
        taken, self._ahead = self._ahead[:n], self._ahead[n:]
        self._given += n
        return taken

    def finish(self) -> None:
        """A `DataError` if lines are left over: the two files do not go together."""
        if self._ahead or next(self._chunks, []):
            raise DataError(
                f"{self.option} {self.path} has more lines than the input's {self._given}: give one line "
                "for each input line"
            )
