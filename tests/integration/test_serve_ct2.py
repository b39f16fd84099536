"""`s2s serve EXPORT --engine ctranslate2`: the same API and page on a CTranslate2 export, the
answers those of `s2s translate EXPORT --engine ctranslate2`, the attention maps those of the run."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import torch
from fastapi.testclient import TestClient

from seq2seq.serve.app import ServerSettings, create_app
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.helpers import cli_translate, run_cli
from tests.servers import ServerProcess

pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
from seq2seq.ct2.engine import CT2Translator  # noqa: E402
from seq2seq.translate.request import Request

LINES = ["red cat runs", "", "the big dog sleeps under a tree", "blue bird"]


@pytest.fixture(scope="module")
def export(served_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serve_ct2") / "export"
    result = run_cli("export", str(served_run), str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def client(export: Path) -> Iterator[TestClient]:
    translator = CT2Translator.load(export, Placement("cpu"))
    settings = ServerSettings(DecodeOverrides(), 0.01)
    with TestClient(create_app(translator, settings, "tiny_ct2")) as c:
        yield c


def test_translations_are_those_of_the_ctranslate2_engine(client, export):
    for beam in (1, 2):
        body = client.post("/translate", json={"text": LINES, "beam": beam, "scores": True}).json()
        expected = cli_translate(export, LINES, "--engine", "ctranslate2", "--beam", str(beam), "--scores")
        scores = ["blank" if s is None else f"{s:.4f}" for s in body["scores"]]  # none for a blank one
        assert [f"{t}\t{s}" for t, s in zip(body["translations"], scores, strict=True)] == expected
    info = client.get("/info").json()
    assert info["engine"] == "ctranslate2" and info["checkpoints"] == ["best.pt"]


def test_attention_maps_are_the_runs_for_the_same_weights(client, served_run):
    ours = Translator.load(served_run, placement=Placement("cpu", "fp32"))
    for translation in (None, "RUNS CAT RED", ""):
        request = {"text": "red cat runs"} | ({} if translation is None else {"translation": translation})
        body = client.post("/attention", json=request).json()
        expected = ours.attention_map("red cat runs", body["translation"], Request.of(ours.options()))
        assert (body["source"], body["target"]) == (expected.source, expected.target)
        weights = torch.tensor(body["weights"])  # CTranslate2's rows, and the </s> column restored
        assert weights == pytest.approx(expected.weights, abs=1e-4)
        assert weights.sum(1) == pytest.approx(torch.ones(len(expected.target)), abs=1e-3)


@pytest.mark.slow
def test_the_command_serves_an_export(export):
    server = ServerProcess(export, "--engine", "ctranslate2")
    try:
        answer = httpx2.post(f"{server.url}/translate", json={"text": ["red cat runs"]}, timeout=30).json()
        assert answer["translations"] == cli_translate(export, ["red cat runs"], "--engine", "ctranslate2")
    finally:
        assert server.stop(signal.SIGINT) == 0, "".join(server.log)
