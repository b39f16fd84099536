"""Compressed text reads as the plain text does, streamed; damage is an error naming the file."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import tracemalloc

import pytest
import zstandard

from seq2seq.data.textio import count_lines, iter_line_chunks, read_lines
from seq2seq.errors import DataError

TEXT = "".join(f"Zeile {i}: grün, Straße, 東京\n" for i in range(40_000)).encode()  # > 1 MB: blocks


def zstd_frames(data: bytes) -> bytes:
    """Two frames, as `zstd` writes a file appended to (a reader must go on past the first)."""
    half = len(data) // 2
    return zstandard.ZstdCompressor().compress(data[:half]) + zstandard.ZstdCompressor().compress(data[half:])


COMPRESS = {
    "gz": gzip.compress,
    "xz": lzma.compress,
    "bz2": bz2.compress,
    "zst": zstd_frames,
}


@pytest.mark.parametrize("suffix", COMPRESS)
def test_each_format_reads_the_same_lines_and_checksums_the_stored_bytes(tmp_path, suffix):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(TEXT)
    packed = tmp_path / f"text.{suffix}"
    packed.write_bytes(COMPRESS[suffix](TEXT))
    digest = hashlib.sha256()
    assert read_lines(packed, digest) == read_lines(plain)
    assert digest.hexdigest() == hashlib.sha256(packed.read_bytes()).hexdigest()  # the file as given
    assert count_lines(packed) == 40_000


def test_the_format_is_read_from_the_bytes_not_the_name(tmp_path):
    unnamed = tmp_path / "corpus.de"
    unnamed.write_bytes(gzip.compress(TEXT))
    assert len(read_lines(unnamed)) == 40_000
    misnamed = tmp_path / "corpus.gz"
    misnamed.write_bytes(TEXT)
    with pytest.raises(DataError, match=r"corpus.gz is named .gz but is not gzip data"):
        read_lines(misnamed)


@pytest.mark.parametrize("suffix", COMPRESS)
def test_a_truncated_file_is_an_error_not_a_short_corpus(tmp_path, suffix):
    packed = tmp_path / f"text.{suffix}"
    whole = COMPRESS[suffix](TEXT)
    packed.write_bytes(whole[: len(whole) * 3 // 4])
    for reader in (read_lines, count_lines):
        with pytest.raises(DataError, match=rf"{packed} is truncated or damaged"):
            reader(packed)


def test_a_compressed_line_error_names_the_decompressed_line(tmp_path):
    packed = tmp_path / "bad.gz"
    packed.write_bytes(gzip.compress(b"ok\nfine\n\xff broken\n"))
    with pytest.raises(DataError, match="bad.gz: line 3 is not valid UTF-8"):
        read_lines(packed)


def test_decompression_is_streamed(tmp_path):
    """A file that decompresses to 40 MB is read holding a few blocks, never the whole text."""
    packed = tmp_path / "big.gz"
    line = b"a sentence of about a hundred bytes, repeated: " * 2 + b"\n"
    with gzip.open(packed, "wb", compresslevel=1) as f:
        for _ in range(40):
            f.write(line * 10_000)
    tracemalloc.start()
    lines = sum(len(chunk) for chunk in iter_line_chunks(packed))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert lines == 400_000
    assert peak < 12 << 20
