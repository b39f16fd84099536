"""`s2s translate --prefix FILE`: each translation starts with its line of FILE (an empty line: none),
from a file or stdin, in both engines' way; a FILE of other lines, or one an output would replace, is
refused before anything is written."""

from __future__ import annotations

from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli

LINES = ["red cat runs", "the big dog sleeps", "", "blue bird"]
PREFIXES = ["RUNS", "", "TREE", "BIRD BLUE"]


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_each_translation_starts_with_its_prefix_as_the_translator_gives_it(tiny_run: TrainedRun, tmp_path):
    prefix = write(tmp_path / "prefix.txt", PREFIXES)
    source, out = write(tmp_path / "src.txt", LINES), tmp_path / "out.txt"
    result = run_cli("translate", str(tiny_run.run), "--device", "cpu", "--precision", "fp32",
                     "-i", str(source), "-o", str(out), "--prefix", str(prefix))  # fmt: skip
    assert result.exit_code == 0, result.output
    written = out.read_text(encoding="utf-8").split("\n")[: len(LINES)]
    translator = Translator.load(tiny_run.run, ["best"], Placement("cpu", "fp32"))
    settings = translator.options(DecodeOverrides()).search
    expected = translator.translate(LINES, Request(settings, 4000), prefixes=PREFIXES)
    assert written == [t.texts[0] for t in expected]
    assert written[0].startswith("RUNS") and written[3].startswith("BIRD BLUE") and written[2] == ""
    assert written[1] == cli_translate(tiny_run.run, LINES[1:2], "--precision", "fp32")[0]
    piped = cli_translate(tiny_run.run, LINES, "--precision", "fp32", "--prefix", str(prefix))
    assert piped == written


def test_a_prefix_file_of_other_lines_is_refused_and_nothing_is_written(tiny_run: TrainedRun, tmp_path):
    source, out = write(tmp_path / "src.txt", LINES), tmp_path / "out.txt"
    short = write(tmp_path / "short.txt", PREFIXES[:2])
    result = run_cli("translate", str(tiny_run.run), "--device", "cpu",
                     "-i", str(source), "-o", str(out), "--prefix", str(short))  # fmt: skip
    assert result.exit_code == 2
    assert f"--prefix {short} has 2 lines and {source} 4: give one for each input line" in result.output
    assert not out.exists() and not any(tmp_path.glob("out.txt.partial*"))
    piped = run_cli("translate", str(tiny_run.run), "--device", "cpu", "--prefix", str(short),
                    input="red\ncat\nbird\n")  # fmt: skip
    assert piped.exit_code == 2 and "has 2 lines and the input more" in piped.output


def test_an_output_that_would_replace_the_prefix_file_is_refused(tiny_run: TrainedRun, tmp_path):
    source, prefix = write(tmp_path / "src.txt", LINES), write(tmp_path / "prefix.txt", PREFIXES)
    result = run_cli("translate", str(tiny_run.run), "--device", "cpu",
                     "-i", str(source), "-o", str(prefix), "--prefix", str(prefix))  # fmt: skip
    assert result.exit_code == 2 and "--prefix" in result.output
    assert prefix.read_text(encoding="utf-8").splitlines() == PREFIXES
