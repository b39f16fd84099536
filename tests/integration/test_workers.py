"""Spawned child processes of the data stages: a child that dies is a clear error, never a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from seq2seq.data.workers import spawned_pool
from seq2seq.errors import Seq2SeqError
from tests.conftest import ROOT as REPO
from tests.conftest import write_corpus


def test_a_child_that_dies_is_a_clear_error():
    with pytest.raises(Seq2SeqError, match="a child process stopped before it finished"):
        with spawned_pool(1, "the test") as pool:
            pool.submit(os._exit, 3).result()


@pytest.mark.slow
def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path):
    """Spawn runs the calling script again in the child: it must fail fast with the cure in the message."""
    src, tgt = write_corpus(tmp_path, "train", 200, seed=1)
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(f"""
            from pathlib import Path
            from seq2seq.config import TokenizerConfig
            from seq2seq.errors import Seq2SeqError
            from seq2seq.data.corpora import file_corpora
            from seq2seq.data.tokenizer import train_or_load_tokenizers
            try:
                train_or_load_tokenizers(TokenizerConfig(vocab_size=60), file_corpora([{str(src)!r}],
                                         [{str(tgt)!r}]), Path({str(tmp_path / "tok")!r}))
            except Seq2SeqError as e:
                print("error:", e)
                raise SystemExit(2)
        """),
        encoding="utf-8",
    )
    env = os.environ | {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert 'if __name__ == "__main__":' in done.stdout
