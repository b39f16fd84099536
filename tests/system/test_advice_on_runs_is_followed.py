"""Advice about runs, exports and prepared corpora is followed (the rule: test_advice_names_what_exists):
training a run that holds one, a run that diverged, a missing tokenizer, GPUs under torchrun, a
server's batching, an export that is not one, a prepared corpus to make again. Each error is
triggered, its advice read from its message, and the option or command it names does the job."""

from __future__ import annotations

import functools
import json

import pytest
from fastapi.testclient import TestClient

from seq2seq.data.manifest import dropped_pairs
from seq2seq.data.prepared import load_prepared_part
from seq2seq.data.tokenizer import train_or_load_tokenizers
from seq2seq.errors import Seq2SeqError
from seq2seq.serve.app import create_app
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.training.distributed import DistInfo, local_device_name
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.system.test_advice_names_what_exists import advice, advised_command, refused, succeeds


@pytest.mark.slow
def test_a_trained_run_is_continued_as_advised(run_copy):
    """`s2s train CONFIG` of a trained run: "use --resume to continue it or --overwrite to start over"."""
    message = refused("train", str(run_copy.config))
    alternatives = advice(message, "train", {})
    assert alternatives == [["--resume"], ["--overwrite"]]
    for advised in alternatives:
        succeeds("train", str(run_copy.config), *advised)


@pytest.mark.slow
def test_a_diverged_run_is_continued_as_advised(run_copy, monkeypatch):
    from seq2seq.training.loss import TrainingLoss

    real_loss = TrainingLoss.forward
    with monkeypatch.context() as patched:  # a loss that turns non-finite: the run diverges
        patched.setattr(TrainingLoss, "forward", lambda *a, **k: real_loss(*a, **k) * float("nan"))
        more = ("--set", "train.max_steps=14")
        message = refused("train", str(run_copy.config), "--resume", *more)
    assert message.startswith("training diverged")
    resumed, _ = advice(message, "train", {})  # or start over with --overwrite (an option of train's)
    succeeds("train", str(run_copy.config), *resumed, *more)


def test_a_missing_tokenizer_advises_overwrite(tiny_run, tmp_path):
    """A run with weights never trains its tokenizer again; the advice, --overwrite, starts a new run
    (followed by `test_a_trained_run_is_continued_as_advised`)."""
    from seq2seq.run.layout import RunDir

    cfg = RunDir(tiny_run.run).load_config()
    with pytest.raises(Seq2SeqError) as error:
        train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path, may_train=False)
    assert advice(str(error.value), "train", {}) == [["--overwrite"]]


def test_a_gpu_for_every_process_is_advised_as_device_cuda():
    torchrun = DistInfo(rank=0, world=2, local_rank=0)
    with pytest.raises(Seq2SeqError) as error:
        local_device_name("cuda:1", torchrun)
    [advised] = advice(str(error.value), "train", {})
    assert advised == ["--device", "cuda"]
    local_device_name(advised[1], torchrun)  # accepted


def test_static_batching_is_advised_where_continuous_cannot_be(trained_run):
    """A decoder-only run decodes in static batches: `--batching continuous` is refused, and the
    advised `--batching static` serves it."""
    translator = Translator.load(trained_run("decoder_only").run, placement=Placement("cpu", "fp32"))

    def settings(batching: str) -> ServerSettings:
        return ServerSettings(DecodeOverrides(max_tokens=200), 20, batching=batching)

    with pytest.raises(Seq2SeqError) as error:
        create_app(translator, settings("continuous"), "decoder_only", running=translator)
    [advised] = advice(str(error.value), "serve", {})
    assert advised[0] == "--batching"
    with TestClient(
        create_app(translator, settings(advised[1]), "decoder_only", running=translator)
    ) as client:
        assert client.post("/translate", json={"text": ["red cat"]}).status_code == 200


@pytest.mark.slow
def test_an_export_is_made_as_advised_and_translates(tiny_run, tmp_path):
    """CTranslate2 given a run where it reads an export advises `s2s export`, whose export then
    translates; s2s's decoder given that export advises leaving --engine out, which translates too."""
    from seq2seq.ct2.export_dir import ExportError
    from seq2seq.ct2.runtime import CT2Translator

    with pytest.raises(ExportError) as refusal:
        CT2Translator.load(tiny_run.run)
    export = tmp_path / "export"
    command = advised_command(str(refusal.value), {"RUN_DIR": str(tiny_run.run), "OUT_DIR": str(export)})
    assert command[0] == "export"
    succeeds(*command)
    message = refused("translate", str(export), "--engine", "s2s", "--device", "cpu", input="red cat\n")
    assert "leave --engine out" in message
    succeeds("translate", str(export), "--device", "cpu", input="red cat\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage", ["dropped pairs removed", "dropped pairs not an object", "manifest removed"]
)
def test_the_advised_prepare_makes_the_corpus_again(run_copy, damage):
    """What `s2s prepare --sample` reads beside a prepared corpus, or its manifest, gone or damaged:
    the error of what reads it says to run `s2s prepare CONFIG` again, and that makes it whole."""
    top = run_copy.run / "prepared"
    if damage == "manifest removed":
        (top / "train" / "manifest.json").unlink()
        read = functools.partial(load_prepared_part, top / "train")
    else:
        dropped = top / "train" / "dropped.json"
        dropped.unlink() if damage == "dropped pairs removed" else dropped.write_text(json.dumps([1]))
        read = functools.partial(dropped_pairs, top, "train")
    with pytest.raises(Seq2SeqError) as error:
        read()
    succeeds(*advised_command(str(error.value), {"CONFIG": str(run_copy.config)}))
    read()
    succeeds("prepare", str(run_copy.config), "--sample", "2")
