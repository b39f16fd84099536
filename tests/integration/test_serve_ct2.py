"""`s2s serve EXPORT --engine ctranslate2`: the same API and page on a CTranslate2 export, the
answers those of `s2s translate EXPORT --engine ctranslate2`, the attention maps those of the run."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import torch
from fastapi.testclient import TestClient

from seq2seq.serve.app import create_app
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.helpers import cli_translate, run_cli
from tests.servers import ServerProcess

pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
from seq2seq.ct2.runtime import CT2Translator, Threads  # noqa: E402
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
    settings = ServerSettings(DecodeOverrides(), 10)
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
        assert weights == pytest.approx(torch.from_numpy(expected.weights), abs=1e-4)
        assert weights.sum(1) == pytest.approx(torch.ones(len(expected.target)), abs=1e-3)


@pytest.mark.slow
def test_the_command_serves_an_export(export):
    server = ServerProcess(export, "--engine", "ctranslate2")
    try:
        answer = httpx2.post(f"{server.url}/translate", json={"text": ["red cat runs"]}, timeout=30).json()
        assert answer["translations"] == cli_translate(export, ["red cat runs"], "--engine", "ctranslate2")
    finally:
        assert server.stop(signal.SIGINT) == 0, "".join(server.log)


def test_concurrent_mixed_requests_get_the_answers_translate_gives(export):
    """Requests of several beams, n-best sizes and prefixes sent at once are batched into a few
    CTranslate2 calls, several in flight (`calls_at_once`), and each gets what the same engine gives
    it alone. CTranslate2 pads a batch to its longest source; in fp32 that moved no token here, so
    the test asks for the same words (and scores to 1e-4)."""
    translator = CT2Translator.load(export, Placement("cpu"), Threads(2, 1))
    assert translator.calls_at_once == 2  # two calls in flight at once
    words = ["red", "cat", "runs", "the", "big", "dog", "sleeps", "blue", "bird", "tree"]
    asked = [
        (
            [" ".join(words[i % 10 : i % 10 + 1 + i % 4]), ""],
            1 + i % 3,
            1 + i % 2,
            ["", ""] if i % 5 else None,
        )
        for i in range(24)
    ]
    answers: list[dict | None] = [None] * len(asked)
    start = threading.Barrier(len(asked))
    with TestClient(create_app(translator, ServerSettings(DecodeOverrides(), 10), "tiny_ct2")) as client:

        def send(k: int) -> None:
            lines, beam, nbest, prefix = asked[k]
            body = {"text": lines, "beam": max(beam, nbest), "nbest": nbest, "scores": True}
            start.wait()
            answers[k] = client.post("/translate", json=body | ({"prefix": prefix} if prefix else {})).json()

        threads = [threading.Thread(target=send, args=(k,)) for k in range(len(asked))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for (lines, beam, nbest, prefix), answer in zip(asked, answers, strict=True):
        request = Request.of(translator.options(DecodeOverrides(beam=max(beam, nbest), nbest=nbest)))
        alone = translator.translate(lines, request, prefixes=prefix)
        assert answer is not None and answer["translations"] == [r.texts[0] for r in alone]
        assert answer["scores"] == pytest.approx([r.scores[0] for r in alone], abs=1e-4)
        if nbest > 1:
            assert [[h["text"] for h in hyps] for hyps in answer["nbest"]] == [r.texts for r in alone]
