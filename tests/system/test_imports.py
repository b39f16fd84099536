"""What importing a part of the package brings along, seen from a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_model_and_the_search_need_no_tokenizer_library():
    """Special ids live in a leaf module: importing the model does not import SentencePiece."""
    modules = "seq2seq.models.encoder_decoder, seq2seq.decoding.search, seq2seq.training.loss"
    code = f"import sys, {modules}; print('sentencepiece' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )
