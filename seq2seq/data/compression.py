"""Compressed text read as a stream: gzip, xz, bzip2 and zstd, known by their magic bytes.

A file is decompressed while it is read, a block at a time, never whole into memory or onto disk.
Its format is read from its first bytes, so a compressed file without the usual suffix is read right;
a file whose suffix names a format its bytes are not is an error (it is not what the user thinks).
A stream that ends before its end marker (a copy cut short, a download in progress) is an error
naming the file, never a short corpus.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

import zstandard

if TYPE_CHECKING:
    from hashlib import _Hash as Hash

    from _typeshed import WriteableBuffer

from seq2seq.errors import DataError

MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd"}
SUFFIXES = {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2", ".zst": "zstd"}


def compression_of(path: Path, head: bytes) -> str | None:
    """The format of the file `path` that starts with `head` (its first 6 bytes or fewer), or None."""
    kind = next((name for magic, name in MAGIC.items() if head.startswith(magic)), None)
    named = SUFFIXES.get(path.suffix.lower())
    if named is not None and kind != named:
        raise DataError(
            f"{path} is named {path.suffix} but is not {named} data"
            + (f" (it is {kind})" if kind else " (its first bytes are not the format's)")
            + ": rename it or compress it again"
        )
    return kind


@contextlib.contextmanager
def open_binary(path: str | Path, digest: Hash | None = None) -> Iterator[BinaryIO]:
    """The bytes of the text in `path`, decompressed as they are read when the file is compressed.

    `digest` (a hashlib object), when given, sees the file's own bytes (compressed or not), as read.
    Reading a damaged or truncated compressed stream raises `DataError` naming the file.
    """
    path = Path(path)
    try:
        raw = path.open("rb", buffering=0)
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror}") from None
    with raw:
        # through a pass-through without a file descriptor: what is read is what the peek buffered
        source = io.BufferedReader(_Passing(raw, digest), 1 << 16)
        kind = compression_of(path, source.peek(6)[:6])  # a peek: a pipe cannot seek back
        if kind is None:
            yield source
            return
        with _decompressed(source, kind) as stream:
            # read as a binary file is; typing's BinaryIO is a class that `io.RawIOBase` is not
            yield cast(BinaryIO, _Checked(stream, path, kind))


def _decompressed(source: BinaryIO, kind: str) -> contextlib.AbstractContextManager:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=source, mode="rb")
    if kind == "xz":
        return lzma.LZMAFile(source, "rb")
    if kind == "bzip2":
        return bz2.BZ2File(source, "rb")
    return contextlib.closing(_Zstd(source))


class _Checked(io.RawIOBase):
    """A decompressing stream whose failures are `DataError`s naming the file."""

    def __init__(self, stream: BinaryIO, path: Path, kind: str) -> None:
        self.stream, self.path, self.kind = stream, path, kind
        self.kind_errors: tuple[type[BaseException], ...] = (EOFError, OSError, lzma.LZMAError, zlib.error)
        if kind == "zstd":
            self.kind_errors += (zstandard.ZstdError,)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(size)
        except self.kind_errors as e:
            raise DataError(
                f"{self.path} is truncated or damaged: its {self.kind} stream cannot be read to its end "
                f"({e}); copy or download it again"
            ) from None
        return data

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer)
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


class _Zstd(io.RawIOBase):
    """zstd frames, one after another, decompressed as read; a stream cut inside a frame is an
    `EOFError` (zstandard's own readers end quietly there)."""

    def __init__(self, source: BinaryIO) -> None:
        self.source, self.new = source, zstandard.ZstdDecompressor().decompressobj
        self.frame, self.in_frame, self.out = self.new(), False, b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self.out:
            raw = self.source.read(1 << 17)
            if not raw:
                if self.in_frame:
                    raise EOFError("the stream ends inside a zstd frame")
                return b""
            while raw:
                if self.frame.eof:
                    self.frame = self.new()
                self.out += self.frame.decompress(raw)
                self.in_frame = not self.frame.eof
                raw = self.frame.unused_data if self.frame.eof else b""
        size = len(self.out) if size is None or size < 0 else size
        data, self.out = self.out[:size], self.out[size:]
        return data


class _Passing(io.RawIOBase):
    """A file's bytes passed through, each seen by `digest` (when given) as it is read; it has no
    file descriptor, so no reader can bypass the buffer in front of it."""

    def __init__(self, raw: io.FileIO, digest: Hash | None) -> None:
        self.raw, self.digest = raw, digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        count = self.raw.readinto(buffer)
        if self.digest is not None:
            self.digest.update(memoryview(buffer)[:count])
        return count
