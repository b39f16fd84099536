"""`check_outputs`: an output is never an input nor inside one; a folder a command writes into holds no
input; an input folder still to be made holds no output either."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.files import OutputError, check_outputs


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.src").write_text("a b c\n")
    return data / "train.src"


@pytest.mark.parametrize("work", ["data", "data/..", ".", "data/inside"])
def test_a_folder_written_into_holds_no_input_and_lies_in_none(tmp_path, corpus, work):
    with pytest.raises(OutputError, match="--work"):
        check_outputs({}, {"--data": corpus.parent}, {"--work": tmp_path / work})


def test_a_folder_beside_the_inputs_is_allowed(tmp_path, corpus):
    check_outputs({"--out": tmp_path / "out.txt"}, {"--data": corpus.parent}, {"--work": tmp_path / "work"})


def test_an_input_file_in_a_folder_written_into_is_refused(tmp_path, corpus):
    with pytest.raises(OutputError, match=r"data.train_src .* lies in data.prepared_dir"):
        check_outputs({}, {"data.train_src": corpus}, {"data.prepared_dir": corpus.parent})


def test_no_output_lies_in_an_input_folder_that_does_not_exist_yet(tmp_path):
    """A run's tokenizer/ before the tokenizer is trained: what is written later is read then."""
    tokenizer = tmp_path / "run" / "tokenizer"
    with pytest.raises(OutputError, match="--figure"):
        check_outputs({"--figure": tokenizer / "lengths.png"}, {"the run's tokenizer/": tokenizer})
