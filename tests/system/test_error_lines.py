"""Every error is an `error:` line: closed streams are clear errors, a closed pipe ends quietly
(141), the checkpoint directory is checked before training, report texts are shown literally."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from seq2seq.data.manifest import read_manifest
from seq2seq.errors import DataError
from tests.conftest import ROOT, tiny_config_dict
from tests.helpers import run_cli


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["--version"], ["cache", "list"]])
def test_a_full_standard_output_is_one_error_line_in_every_command(args):
    """Before: `s2s --version > /dev/full` ended in a traceback where `s2s cache list` said `error:`."""
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", *args], stdout=full, stderr=subprocess.PIPE, cwd=ROOT
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(b"error: ") and b"Traceback" not in result.stderr
    assert result.stderr.count(b"\n") == 1, result.stderr


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
    figure = attention_figure(AttentionMap(pieces, pieces, np.full((3, 3), 1 / 3, dtype=np.float32)))
    assert image(figure, "x").startswith("<img")  # unbalanced math would raise here
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == pieces


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m.pop("counts"),
        lambda m: m["made_from"].update(text=1),
        lambda m: m["arrays"]["costs"].pop("bytes"),
        lambda m: m.clear(),
    ],
    ids=["counts removed", "text not an object", "array size removed", "empty object"],
)
def test_a_prepared_manifest_of_the_wrong_shape_is_made_again_by_the_advised_command(tmp_path, damage):
    """`s2s prepare` heals it, as the error of `read_manifest` advises; no KeyError on the way."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    assert run_cli("prepare", str(config)).exit_code == 0
    prepared = tmp_path / "run" / "prepared" / "train"
    manifest = json.loads((prepared / "manifest.json").read_text())
    damage(manifest)
    (prepared / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        DataError, match=r"manifest.json is not a manifest .*: run `s2s prepare CONFIG` again"
    ):
        read_manifest(prepared)
    result = run_cli("prepare", str(config))
    assert result.exit_code == 0, result.output
    assert "preparing corpus train" in result.output
    read_manifest(prepared)  # whole again


EXPORT_DAMAGE = {
    "not JSON": b"{",
    "not an object": b"[]",
    "no config": b'{"run_dir": "r", "checkpoint": "c", "quantize": null}',
    "config not an object": b'{"run_dir": "r", "checkpoint": "c", "quantize": null, "config": 1}',
    "config invalid": b'{"run_dir": "r", "checkpoint": "c", "quantize": null, "config": {"model": {"x": 1}}}',
    "nested without end": b"[" * 100_000 + b"]" * 100_000,
}


def test_a_damaged_export_info_is_an_error_naming_it_and_the_advised_export_works(tiny_run, tmp_path):
    pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
    export, source = tmp_path / "export", tmp_path / "src.txt"
    source.write_text("red cat\n", encoding="utf-8")
    assert run_cli("export", str(tiny_run.run), str(export)).exit_code == 0
    for what, raw in EXPORT_DAMAGE.items():
        (export / "s2s.json").write_bytes(raw)
        result = run_cli("translate", str(export), "--engine", "ctranslate2", "-i", str(source))
        assert result.exit_code == 2, (what, result.output)
        assert f"error: {export / 's2s.json'} " in result.output, what
        assert "make the export again with `s2s export RUN_DIR --format ctranslate2 NEW_DIR`" in result.output
    remade = tmp_path / "new"
    result = run_cli("export", str(tiny_run.run), "--format", "ctranslate2", str(remade))  # the advice
    assert result.exit_code == 0, result.output
    result = run_cli("translate", str(remade), "--engine", "ctranslate2", "-i", str(source))
    assert result.exit_code == 0, result.output
