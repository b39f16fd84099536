"""`s2s serve` on a multilingual run: each request chooses its target language (or gets the server's
--to), its answers are those of `s2s translate --to`, requests into different languages are never
decoded together, and a missing or unknown language is a 422 that lists the run's languages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from seq2seq.data.control import control_id
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import Batcher
from seq2seq.serve.server_settings import Limits, ServerSettings
from seq2seq.translate.direction import Direction
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli

FP32 = ("--precision", "fp32")  # as the served translator decodes (auto is bf16 on some CPUs)

LINES = ["red cat runs", "", "the big dog sleeps"]


@pytest.fixture(scope="module")
def translator(multilingual_run: TrainedRun) -> Translator:
    return Translator.load(multilingual_run.run, placement=Placement("cpu", "fp32"))  # as FP32 below


def make_client(translator: Translator, to: str = "") -> TestClient:
    settings = ServerSettings(DecodeOverrides(max_tokens=200), 20, Limits(), direction=Direction(to))
    return TestClient(create_app(translator, settings, "multilingual", running=translator))


@pytest.fixture(scope="module")
def client(translator: Translator) -> Iterator[TestClient]:
    with make_client(translator) as c:
        yield c


@pytest.mark.parametrize("to", ["en", "de"])
def test_a_request_into_a_language_gets_what_translate_to_gives(client, multilingual_run, to):
    response = client.post("/translate", json={"text": LINES, "to": to, "scores": True})
    assert response.status_code == 200, response.text
    expected = [
        line.split("\t") for line in cli_translate(multilingual_run.run, LINES, "--to", to, "--scores", *FP32)
    ]
    assert response.json()["translations"] == [row[0] for row in expected]
    assert response.json()["scores"] == [
        pytest.approx(float(row[1]), abs=1e-3) if row[0] else None for row in expected
    ]


def test_requests_into_different_languages_are_decoded_apart(translator, monkeypatch):
    """Queued together, so one window collects them: one decode call per language, each with its
    language's token first."""
    calls: list[tuple[tuple[int, ...], list[str]]] = []
    translate = translator.translate

    def spy(lines, request, *args, **kwargs):
        calls.append((translator.source_tokens.prefix(request.direction), list(lines)))
        return translate(lines, request, *args, **kwargs)

    monkeypatch.setattr(translator, "translate", spy)
    settings = translator.options(DecodeOverrides(beam=1)).search
    batcher = Batcher(translator, window_s=0.05, max_tokens=10_000)
    asked = [("en", "en red cat"), ("de", "de red cat"), ("en", "en blue bird")]
    futures = [batcher.translate([line], Request(settings, 10_000, Direction(to))) for to, line in asked]
    batcher.start()
    answers = {
        line: future.result(timeout=60)[0].texts for (_, line), future in zip(asked, futures, strict=True)
    }
    batcher.close()
    monkeypatch.undo()
    assert sorted(len(lines) for _, lines in calls) == [1, 2]
    for prefix, lines in calls:
        to = lines[0].split()[0]
        assert prefix == (control_id(translator.tokenizers.src, f"<2{to}>"),)
        assert {line.split()[0] for line in lines} == {to}
        assert [answers[line] for line in lines] == [
            t.texts for t in translator.translate(lines, Request(settings, 200, Direction(to)))
        ]


def test_a_missing_or_unknown_language_is_a_422_listing_the_run_s_languages(client):
    missing = client.post("/translate", json={"text": ["red"]})
    assert missing.status_code == 422
    assert missing.json() == {"error": "this run translates into de, en: choose one with to"}
    unknown = client.post("/translate", json={"text": ["red"], "to": "fr"})
    assert unknown.status_code == 422
    assert unknown.json() == {"error": "to fr: not a language of this run (its languages: de, en)"}
    assert client.post("/attention", json={"text": "red cat"}).status_code == 422


def test_info_lists_the_targets_and_the_server_s_default(client, translator, multilingual_run):
    assert client.get("/info").json()["languages"] | {"source": "", "target": ""} == {
        "source": "",
        "target": "",
        "targets": ["de", "en"],
        "to": "",
    }
    with make_client(translator, to="de") as into_de:
        assert into_de.get("/info").json()["languages"]["to"] == "de"
        answer = into_de.post("/translate", json={"text": LINES}).json()["translations"]
        assert answer == cli_translate(multilingual_run.run, LINES, "--to", "de", *FP32)


def test_attention_reads_the_source_with_its_language_token(client):
    body = client.post("/attention", json={"text": "red cat", "to": "de"}).json()
    assert body["source"][0] == "<2de>" and body["source"][-1] == "</s>"
    assert len(body["weights"][0]) == len(body["source"])


def test_serve_refuses_an_unknown_to_at_start(multilingual_run):
    result = run_cli("serve", str(multilingual_run.run), "--device", "cpu", "--port", "0", "--to", "fr")
    assert result.exit_code == 2
    assert "--to fr: not a language of this run (its languages: de, en)" in result.output
