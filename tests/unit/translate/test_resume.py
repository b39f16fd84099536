"""`translate_file`: a corpus translated into a file resumes after an interruption with exactly the
lines an uninterrupted run writes, in input order, each once, and refuses to mix two different jobs."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from seq2seq.config import DecodeConfig
from seq2seq.data.textio import LinesInStep
from seq2seq.errors import DataError, Seq2SeqError
from seq2seq.translate import resume
from seq2seq.translate.lines import Translation
from seq2seq.translate.options import DecodeOverrides, decode_options
from seq2seq.translate.request import Request

REQUEST = Request.of(decode_options(DecodeOverrides(), DecodeConfig()), scores=False)
SETTINGS = {"run": "/runs/a", "search": {"beam": 5}}
CHUNK = 7  # lines per chunk in these tests: several chunks and a short last one


class Killed(Exception):
    """Stands in for a kill in the middle of a chunk."""


class FakeEngine:
    """Translates a line into its reverse; remembers the first line number of each chunk it was
    given, and stops dead (`Killed`) when asked for chunk number `die_at` (1 = the first)."""

    def __init__(self, die_at: int = 0) -> None:
        self.die_at, self.firsts = die_at, []

    def translate(self, lines: Sequence[str], request, first_line=1, prefixes=None) -> list[Translation]:
        self.firsts.append(first_line)
        if len(self.firsts) == self.die_at:
            raise Killed
        return [Translation([line[::-1]], [-1.5]) for line in lines]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(resume, "CHUNK_LINES", CHUNK)


def run(engine, source: Path, out: Path, settings=SETTINGS, restart=False, scores=False) -> int:
    request = REQUEST.replace(scores=scores)
    return resume.translate_file(engine, request, source, out, settings, restart, lambda n: None)


def corpus(path: Path, count: int = 30) -> Path:
    path.write_text("".join(f"line {i} {'x' * (i % 5)}\n" for i in range(1, count + 1)), encoding="utf-8")
    return path


def expected(source: Path) -> str:
    return "".join(line[::-1] + "\n" for line in source.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("die_at", [1, 2, 4, 5])
def test_a_resumed_run_writes_the_lines_of_an_uninterrupted_one_and_decodes_only_what_was_left(
    tmp_path, die_at
):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(die_at), source, out)
    assert not out.exists()  # only the partial file holds the work so far
    again = FakeEngine()
    assert run(again, source, out) == CHUNK * (die_at - 1)
    assert out.read_text(encoding="utf-8") == expected(source)
    assert again.firsts == list(range(CHUNK * (die_at - 1) + 1, 31, CHUNK))  # not from line 1
    assert not any(p.exists() for p in resume.partial_paths(out))


def test_a_chunk_written_after_the_last_record_is_written_once(tmp_path):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(3), source, out)
    partial, _ = resume.partial_paths(out)
    with partial.open("ab") as f:  # killed after the chunk reached the disk, before its record did
        f.write(b"a chunk that was never recorded\n" * CHUNK)
    run(FakeEngine(), source, out)
    assert out.read_text(encoding="utf-8") == expected(source)


def test_a_compressed_input_resumes_with_the_same_lines(tmp_path):
    plain = corpus(tmp_path / "mono.txt", 40)
    source, out = tmp_path / "mono.txt.gz", tmp_path / "out.txt"
    source.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(Killed):
        run(FakeEngine(4), source, out)
    run(FakeEngine(), source, out)
    assert out.read_text(encoding="utf-8") == expected(plain)


def test_other_settings_are_refused_naming_what_differs_and_change_nothing(tmp_path):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(3), source, out)
    before = [p.read_bytes() for p in resume.partial_paths(out)]
    with pytest.raises(DataError, match=r"search: \{'beam': 5\} then, \{'beam': 4\} now.*--restart"):
        run(FakeEngine(), source, out, {**SETTINGS, "search": {"beam": 4}})
    assert [p.read_bytes() for p in resume.partial_paths(out)] == before
    again = FakeEngine()
    run(again, source, out, {**SETTINGS, "search": {"beam": 4}}, restart=True)
    assert again.firsts[0] == 1 and out.read_text(encoding="utf-8") == expected(source)


@pytest.mark.parametrize("change", ["edited", "shorter"])
def test_an_input_changed_since_the_interruption_is_refused(tmp_path, change):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(4), source, out)
    lines = source.read_text(encoding="utf-8").splitlines()
    lines = lines[:CHUNK] if change == "shorter" else [lines[0] + "!", *lines[1:]]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="--restart"):
        run(FakeEngine(), source, out)
    assert not out.exists()


def test_a_record_without_its_partial_file_begins_again(tmp_path):
    """Killed between the final rename and the record's removal: the record describes nothing left."""
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    run(FakeEngine(), source, out)
    partial, record = resume.partial_paths(out)
    record.write_text(resume.Progress(SETTINGS, 28, 200, "0" * 64).to_json(), encoding="utf-8")
    again = FakeEngine()
    run(again, source, out)
    assert again.firsts[0] == 1 and out.read_text(encoding="utf-8") == expected(source)


@pytest.mark.parametrize(
    "damage",
    [
        {"format": 1, "lines": "many"},
        "a string, not a record",
        {"format": 1, "settings": SETTINGS, "lines": "7", "output_bytes": 10, "input_sha256": "0" * 64},
        {"format": 1, "settings": SETTINGS, "lines": -7, "output_bytes": 10, "input_sha256": "0" * 64},
    ],
)
def test_a_damaged_record_is_an_error_that_says_how_to_go_on(tmp_path, damage):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(2), source, out)
    _, record = resume.partial_paths(out)
    record.write_text(json.dumps(damage), encoding="utf-8")
    with pytest.raises(DataError, match="cannot be read: add --restart"):
        run(FakeEngine(), source, out)


def test_an_input_grown_after_its_last_chunk_was_recorded_is_refused(tmp_path, monkeypatch):
    """Killed after the last (short) chunk's record, before the rename: lines added to the input since
    then end the recorded chunk somewhere else, and are not translated after it twice."""
    source, out = corpus(tmp_path / "mono.txt", 2 * CHUNK + 3), tmp_path / "out.txt"
    real_replace = os.replace

    def killed_at_the_rename(src, dst):  # the records' own renames go through
        if str(src).endswith(".partial"):
            raise Killed
        real_replace(src, dst)

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", killed_at_the_rename)
        with pytest.raises(Killed):
            run(FakeEngine(), source, out)
    assert json.loads(resume.partial_paths(out)[1].read_text())["lines"] == 2 * CHUNK + 3
    with source.open("a", encoding="utf-8") as f:
        f.write("one more line\n" * 5)
    with pytest.raises(DataError, match="not the ones translated before.*--restart"):
        run(FakeEngine(), source, out)
    assert not out.exists()


def test_multibyte_text_resumes_at_the_right_byte(tmp_path):
    source, out = tmp_path / "mono.txt", tmp_path / "out.txt"
    source.write_text("".join(f"Grüße {i} € 😀 {'ä' * (i % 4)}\n" for i in range(30)), encoding="utf-8")
    with pytest.raises(Killed):
        run(FakeEngine(3), source, out)
    run(FakeEngine(), source, out)
    assert out.read_text(encoding="utf-8") == expected(source)


def test_a_write_the_disk_takes_only_part_of_is_finished(tmp_path):
    class Nearly:  # an unbuffered file on a nearly full disk: each write takes 5 bytes at most
        def __init__(self, f):
            self.f = f

        def write(self, data):
            return self.f.write(bytes(data[:5]))

        def fileno(self):
            return self.f.fileno()

    with (tmp_path / "partial").open("wb", buffering=0) as f:
        resume._append(Nearly(f), "translated line ünïcode\n".encode() * 3, tmp_path / "out")
    assert (tmp_path / "partial").read_bytes() == "translated line ünïcode\n".encode() * 3


def test_a_read_only_output_is_continued_and_keeps_its_mode(tmp_path):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    out.write_text("an older translation\n", encoding="utf-8")
    out.chmod(0o444)
    with pytest.raises(Killed):
        run(FakeEngine(2), source, out)
    partial, _ = resume.partial_paths(out)
    assert partial.stat().st_mode & 0o200  # its owner can continue it
    run(FakeEngine(), source, out)
    assert out.read_text(encoding="utf-8") == expected(source)
    assert out.stat().st_mode & 0o777 == 0o444


def test_a_second_writer_of_the_same_output_is_refused(tmp_path):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"

    class Intruder(FakeEngine):
        def translate(self, lines, *args, **kwargs):
            with pytest.raises(Seq2SeqError, match="another command is writing"):
                run(FakeEngine(), source, out)
            return super().translate(lines, *args, **kwargs)

    run(Intruder(), source, out)
    assert out.read_text(encoding="utf-8") == expected(source)


def test_scores_and_empty_lines_keep_one_output_line_per_input_line(tmp_path):
    source, out = tmp_path / "mono.txt", tmp_path / "out.txt"
    source.write_text("a\n\nb c\n" * 5, encoding="utf-8")
    with pytest.raises(Killed):
        run(FakeEngine(2), source, out, scores=True)
    run(FakeEngine(), source, out, scores=True)
    lines = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert lines == ["a\t-1.5000", "\t-1.5000", "c b\t-1.5000"] * 5


@pytest.mark.parametrize(
    "record, precision",
    [
        ({"settings": {"dtype": "torch.bfloat16", "quantize": None}}, "bf16"),
        ({"settings": {"dtype": "None", "quantize": None}}, "fp32"),  # plain fp32 runs with no dtype
        ({"settings": {"dtype": "None", "quantize": "int8"}}, None),  # int8 has no precision to keep
        ({"settings": {}}, None),
        ("{not json", None),
        (None, None),  # nothing recorded
    ],
)
def test_the_recorded_precision_is_what_the_interrupted_command_ran_at(tmp_path, record, precision):
    out = tmp_path / "out.txt"
    if record is not None:
        text = record if isinstance(record, str) else json.dumps(record)
        resume.partial_paths(out)[1].write_text(text, encoding="utf-8")
    assert resume.recorded_precision(out) == precision


class PrefixEngine(FakeEngine):
    """FakeEngine that writes each line's prefix, then the reversed line."""

    def translate(self, lines, request, first_line=1, prefixes=None):
        plain = super().translate(lines, request, first_line)
        return [Translation([f"{p}|{t.texts[0]}"], t.scores) for p, t in zip(prefixes, plain, strict=True)]


@pytest.mark.parametrize("die_at", [1, 3])
def test_a_resumed_run_takes_up_its_prefixes_at_the_line_it_continues_from(tmp_path, die_at):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    prefixes = tmp_path / "prefixes.txt"
    prefixes.write_text("".join(f"p{i}\n" for i in range(1, 31)), encoding="utf-8")

    def go(engine):
        return resume.translate_file(
            engine, REQUEST, source, out, SETTINGS, False, lambda n: None,
            LinesInStep(prefixes, "--prefix"),
        )  # fmt: skip

    with pytest.raises(Killed):
        go(PrefixEngine(die_at))
    assert go(PrefixEngine()) == CHUNK * (die_at - 1)
    lines = source.read_text(encoding="utf-8").splitlines()
    assert out.read_text(encoding="utf-8") == "".join(
        f"p{i}|{line[::-1]}\n" for i, line in enumerate(lines, 1)
    )


def test_a_prefix_file_of_other_lines_leaves_the_output_unwritten(tmp_path):
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    for count in (29, 31):
        prefixes = tmp_path / f"prefixes{count}.txt"
        prefixes.write_text("p\n" * count, encoding="utf-8")
        with pytest.raises(DataError, match="give one line for each input line"):
            resume.translate_file(
                PrefixEngine(), REQUEST, source, out, SETTINGS, True, lambda n: None,
                LinesInStep(prefixes, "--prefix"),
            )  # fmt: skip
        assert not out.exists()


def test_a_record_made_before_a_setting_existed_continues_where_it_is_unused(tmp_path):
    """`s2s translate` gives a setting it has added since (--to, --prefix) as None when unused: a
    partial run an older s2s recorded without that key continues."""
    source, out = corpus(tmp_path / "mono.txt"), tmp_path / "out.txt"
    with pytest.raises(Killed):
        run(FakeEngine(3), source, out)
    assert run(FakeEngine(), source, out, settings={**SETTINGS, "to": None, "prefix": None}) == 2 * CHUNK
    assert out.read_text(encoding="utf-8") == expected(source)
