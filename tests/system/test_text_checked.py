"""Text is checked, not guessed: invalid UTF-8 or a NUL byte (UTF-16) is an error naming the file and
line; a UTF-8 byte-order mark is dropped."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import tiny_config_dict
from tests.helpers import run_cli


def test_nul_bytes_are_an_error_naming_file_and_line(tiny_run, tmp_path):
    run = tiny_run.run
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("red cat\nblue bird\n".encode("utf-16-le"))
    for args in (
        ["translate", str(run), "-i", str(utf16)],
        ["evaluate", "--hyp", str(utf16), "--ref", str(utf16)],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert f"{utf16}: line 1 contains a NUL byte" in result.output
    result = run_cli("translate", str(run), input=b"red cat\nblue\x00 bird\n")
    assert result.exit_code == 2 and "stdin: line 2 contains a NUL byte" in result.output


def test_a_corpus_in_utf16_is_refused_before_training(tmp_path):
    raw = tiny_config_dict(tmp_path)
    path = Path(raw["data"]["train_tgt"])
    path.write_bytes(path.read_text().encode("utf-16-le"))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "NUL byte" in result.output
    assert not (tmp_path / "run").exists()


def test_a_utf8_bom_is_not_part_of_the_first_line(tiny_run, tmp_path):
    run = tiny_run.run
    ref = tmp_path / "ref.txt"
    ref.write_text("red cat on the house\nblue bird\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"\xef\xbb\xbf" + ref.read_bytes())
    result = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    assert '"score": 100.0' in (tmp_path / "s.json").read_text()
    plain = run_cli("translate", str(run), input="red cat\n").stdout
    with_bom = run_cli("translate", str(run), input="\ufeffred cat\n".encode()).stdout
    assert with_bom == plain
