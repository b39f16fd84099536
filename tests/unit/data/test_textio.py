"""Every text reader is bounded by the line, not the stream: a line over `MAX_LINE_BYTES` is an error
naming it after bounded reading, whatever reads it; any number of short lines is fine."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seq2seq.data.textio import MAX_LINE_BYTES, count_lines, iter_line_chunks, read_lines, stream_line_chunks
from seq2seq.errors import DataError
from tests.helpers import endless_fifo


def _all_lines(chunks: Iterator[list[str]]) -> list[str]:
    return [line for chunk in chunks for line in chunk]


# every way s2s reads lines from a named file (a path) ...
FILE_READERS: dict[str, Callable[[Path], object]] = {
    "read_lines": read_lines,
    "iter_line_chunks": lambda path: _all_lines(iter_line_chunks(path)),
    "iter_line_chunks small blocks": lambda path: _all_lines(iter_line_chunks(path, block=4096)),
    "count_lines": count_lines,
}
# ... and from a stream (stdin): one with a file descriptor, and an in-memory one
STREAM_READERS: dict[str, Callable[[Path], object]] = {
    "stream fd": lambda path: _all_lines(stream_line_chunks(path.open("rb"), str(path))),
    "stream in memory": lambda path: _all_lines(stream_line_chunks(io.BytesIO(path.read_bytes()), str(path))),
}
READERS = {**FILE_READERS, **STREAM_READERS}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
@pytest.mark.parametrize("char", ["a", "é", "猫"])
def test_a_line_over_the_limit_is_an_error_naming_it_and_one_at_the_limit_is_read(tmp_path, reader, char):
    width = len(char.encode())
    at_limit = char * (MAX_LINE_BYTES // width)
    over = at_limit + "a" * width  # one character more: over the limit in bytes, whatever the width
    path = tmp_path / "t.txt"
    path.write_text(f"first\n{at_limit}\nthird\n", encoding="utf-8")
    assert reader(path) in (3, ["first", at_limit, "third"])
    path.write_text(f"first\n{at_limit}\n{over}\nfourth\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"t.txt: line 3 is longer than {MAX_LINE_BYTES:,} bytes"):
        reader(path)
    path.write_text(f"first\n{over}", encoding="utf-8")  # the last line, without its '\n'
    with pytest.raises(DataError, match="t.txt: line 2 is longer than"):
        reader(path)


PIPE_READERS = {**FILE_READERS, "stream fd": STREAM_READERS["stream fd"]}  # in memory: the next test


@pytest.mark.parametrize("reader", PIPE_READERS.values(), ids=PIPE_READERS.keys())
@pytest.mark.parametrize("fill, message", [(b"a", "line 1 is longer than"), (b"\0", "line 1 contains a NUL")])
def test_a_line_that_never_ends_stops_the_reader_after_bounded_reading(tmp_path, reader, fill, message):
    with endless_fifo(tmp_path, fill) as (path, written):
        with pytest.raises(DataError, match=message):
            reader(path)
    assert written[0] <= MAX_LINE_BYTES + 2 * (1 << 20) + (1 << 17)  # the limit, a block, the pipe's buffer


def test_an_in_memory_stream_is_read_in_bounded_blocks():
    class Endless(io.RawIOBase):
        served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
            buffer[:] = b"a" * len(buffer)
            self.served += len(buffer)
            return len(buffer)

    stream = Endless()
    with pytest.raises(DataError, match="stdin: line 1 is longer than"):
        _all_lines(stream_line_chunks(stream, "stdin"))  # type: ignore[arg-type]
    assert stream.served <= MAX_LINE_BYTES + (1 << 17)


def test_millions_of_short_lines_are_not_a_long_line(tmp_path):
    path = tmp_path / "many.txt"
    path.write_bytes(b"a b\n\n" * 1_000_000)
    assert count_lines(path) == 2_000_000
    assert len(read_lines(path)) == 2_000_000
    assert len(_all_lines(stream_line_chunks(io.BytesIO(path.read_bytes()), "stdin"))) == 2_000_000
