"""`s2s translate`'s work called without the command line: one line out per line in, as the CLI's."""

from __future__ import annotations

import io

from seq2seq.commands.jobs import TranslateJob
from seq2seq.commands.translate import translate
from seq2seq.translate.placement import Placement
from tests.helpers import cli_translate

LINES = ["red cat runs", "", "the big dog sleeps under a tree", "blue bird on the house", "a"]
CPU = Placement("cpu", "fp32")  # not `auto`: the same numbers on every CPU (auto is bf16 on some)


def test_one_line_out_per_line_in_as_s2s_translate_writes(tiny_run):
    out = io.StringIO()
    translate(
        TranslateJob(tiny_run.run, placement=CPU), stdin=io.BytesIO("\n".join(LINES).encode()), stdout=out
    )
    lines = out.getvalue().split("\n")
    assert len(lines) == len(LINES) + 1 and lines[-1] == ""  # every line ends with its newline
    assert lines[:-1] == cli_translate(tiny_run.run, LINES, "--precision", "fp32")


def test_a_file_translates_into_a_file_as_from_stdin_to_stdout(tiny_run, tmp_path):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    job = TranslateJob(tiny_run.run, placement=CPU, scores=True)
    translate(job, source, output)
    assert output.read_text(encoding="utf-8").splitlines() == cli_translate(
        tiny_run.run, LINES, "--precision", "fp32", "--scores"
    )
