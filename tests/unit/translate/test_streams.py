"""`s2s translate`'s output loop and stream checks, without the CLI."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import DataError
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request
from seq2seq.translate.streams import check_std_streams, format_translation, translate_stream


class Upper:
    """Translates a line to itself in capitals, with its line number as the score."""

    def __init__(self) -> None:
        self.first_lines: list[int] = []

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        self.first_lines.append(first_line)
        return [Translation([line.upper()], [float(first_line + i)]) for i, line in enumerate(lines)]


def test_format_translation_tabs_hypotheses_and_scores() -> None:
    result = Translation(["a b", "c"], [-0.5, -1.25])
    assert format_translation(result, with_scores=True) == "a b\t-0.5000\tc\t-1.2500\n"
    assert format_translation(Translation(["a b"], [-0.5]), with_scores=False) == "a b\n"


def test_translate_stream_writes_one_line_per_input_line_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = iter([["a", "b"], ["c"]])
    monkeypatch.setattr("seq2seq.translate.streams.stream_line_chunks", lambda source, name: chunks)
    translator, sink, counts = Upper(), io.StringIO(), []
    request = Request(SearchSettings(), 100, scores=True)
    translate_stream(translator, request, io.BytesIO(), "stdin", sink, counts.append)
    assert sink.getvalue() == "A\t1.0000\nB\t2.0000\nC\t3.0000\n"
    assert translator.first_lines == [1, 3] and counts == [2, 1]


def test_closed_stdin_is_a_data_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(DataError, match="stdin is closed"):
        check_std_streams(None, tmp_path / "out.txt")
