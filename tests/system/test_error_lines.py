"""Every error is an `error:` line: closed streams are clear errors, a closed pipe ends quietly
(141), the checkpoint directory is checked before training, report texts are shown literally."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

from tests.conftest import ROOT
from tests.helpers import run_cli


def test_a_closed_pipe_ends_quietly(tiny_run):
    run = tiny_run.run
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written (`| head -0`)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", str(run)],
            input=b"red cat\n" * 50,
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 141
    assert result.stderr == b""


@pytest.mark.parametrize(
    "closed, extra, message",
    [("0<&-", [], b"stdin is closed"), ("1>&-", ["-i", "/dev/null"], b"stdout is closed")],
)
def test_closed_standard_streams_are_clear_errors(tiny_run, closed, extra, message):
    run = tiny_run.run
    command = f"{sys.executable} -m seq2seq translate {run} {' '.join(extra)} {closed}"
    result = subprocess.run(["bash", "-c", command], capture_output=True, cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and b"Traceback" not in result.stderr


def test_unwritable_checkpoints_fail_before_training(run_copy, tmp_path):
    config, run = run_copy.config, run_copy.run
    shutil.rmtree(run / "checkpoints")
    (run / "metrics.jsonl").unlink()
    (run / "checkpoints").write_text("not a directory")
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and f"cannot write checkpoints to {run / 'checkpoints'}" in result.output
    assert not (run / "metrics.jsonl").exists()


def test_plot_texts_are_shown_literally():
    """Sentences and file names with `$` reach a report's figures as written, never as math."""
    pytest.importorskip("matplotlib")
    from seq2seq.evaluation.report import AttentionMap, attention_figure, image

    pieces = ["▁$\\frac{$", "$x^2$", "</s>"]
    figure = attention_figure(AttentionMap(pieces, pieces, torch.full((3, 3), 1 / 3)))
    assert image(figure, "x").startswith("<img")  # unbalanced math would raise here
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == pieces
