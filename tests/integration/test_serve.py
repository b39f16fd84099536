"""`s2s serve`: the API on a tiny trained run, its dynamic batching, limits, errors and shutdown."""

from __future__ import annotations

import dataclasses
import re
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import torch
from fastapi.testclient import TestClient

from seq2seq.data.augment import title
from seq2seq.decoding.running_search import RunningSearch
from seq2seq.serve.app import create_app
from seq2seq.serve.server import listen
from seq2seq.serve.server_settings import Limits, ServerSettings
from seq2seq.translate.casing import Recaser
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import WORDS
from tests.helpers import cli_translate, run_cli
from tests.servers import ServerProcess, request_in_flight

LIMITS = Limits(max_lines=8, max_chars=60, max_body_bytes=4000, timeout_s=30.0, max_beam=4)
LINES = ["red cat runs", "", "the big dog sleeps under a tree", "   ", "blue bird"]


FP32 = ("--precision", "fp32")  # as the `translator` fixture decodes (auto is bf16 on some CPUs)


@pytest.fixture(scope="module")
def translator(served_run: Path) -> Translator:
    return Translator.load(served_run, placement=Placement("cpu", "fp32"))


def make_client(
    translator: Translator, window_s: float = 0.02, batching: str = "continuous", **limits: object
) -> TestClient:
    settings = ServerSettings(
        DecodeOverrides(max_tokens=200),
        window_s * 1000,
        dataclasses.replace(LIMITS, **limits),
        ("https://ok.example",),
        batching=batching,
    )
    return TestClient(create_app(translator, settings, "tiny", running=translator))


@pytest.fixture(scope="module", params=["continuous", "static"])
def client(translator: Translator, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """A server of each batching: every test of the API holds for both."""
    with make_client(translator, batching=request.param) as c:
        yield c


def test_translations_are_those_of_s2s_translate_one_per_line_in_order(client, served_run):
    response = client.post("/translate", json={"text": LINES})
    assert response.status_code == 200
    assert response.json() == {"translations": cli_translate(served_run, LINES, *FP32)}
    assert response.json()["translations"][1] == response.json()["translations"][3] == ""


def test_nbest_and_scores_are_those_of_s2s_translate(client, served_run):
    body = client.post("/translate", json={"text": LINES, "nbest": 3, "scores": True}).json()
    expected = [line.split("\t") for line in cli_translate(served_run, LINES, "--nbest", "3", *FP32)]
    assert [[h["text"] for h in hyps] for hyps in body["nbest"]] == [row[0::2] for row in expected]
    assert [[h["score"] for h in hyps] for hyps in body["nbest"]] == [
        pytest.approx([None if s == "blank" else float(s) for s in row[1::2]], abs=1e-3) for row in expected
    ]
    assert body["translations"] == [row[0] for row in expected]
    assert body["scores"] == [hyps[0]["score"] for hyps in body["nbest"]]


def test_alignments_and_markup_are_those_of_s2s_translate(client, served_run):
    body = client.post("/translate", json={"text": LINES, "alignments": True}).json()
    expected = [
        line.split("\t")
        for line in cli_translate(served_run, LINES, "--alignments", "--engine", "s2s", *FP32)
    ]
    assert body["translations"] == [row[0] for row in expected]
    assert body["alignments"] == [row[1] for row in expected]
    marked = ["<b>red</b> cat &amp; runs", "", "<i>blue <br/>bird</i>"]
    body = client.post("/translate", json={"text": marked, "markup": "html"}).json()
    assert body["translations"] == cli_translate(
        served_run, marked, "--markup", "html", "--engine", "s2s", *FP32
    )
    assert "alignments" not in body
    response = client.post("/translate", json={"text": ["ok", "<b>cat"], "markup": "xml"})
    assert response.status_code == 422 and "line 2" in response.json()["error"]


def test_alignments_of_an_nbest_answer_cost_one_attention_pass_a_line(client, translator, monkeypatch):
    """The response holds the best hypothesis's links only: the others are not computed."""
    best = client.post("/translate", json={"text": LINES, "alignments": True, "beam": 3}).json()
    passes = []
    attention_map = translator.attention_map
    monkeypatch.setattr(translator, "attention_map", lambda *a: passes.append(a) or attention_map(*a))
    body = client.post("/translate", json={"text": LINES, "alignments": True, "beam": 3, "nbest": 3}).json()
    assert len(body["nbest"][0]) == 3 and body["translations"] == best["translations"]
    assert body["alignments"] == best["alignments"]
    assert len(passes) == sum(
        1 for line, t in zip(LINES, body["translations"], strict=True) if line.strip() and t
    )


@pytest.mark.slow
@pytest.mark.parametrize("batching", ["continuous", "static"])
def test_concurrent_requests_are_decoded_together_and_each_gets_its_own_answers(
    translator, monkeypatch, batching
):
    """50 clients at once, with three different search settings: every answer equals the line
    translated alone with its settings, and the lines were decoded together, never mixed: in few
    calls (static), or in running batches of several sentences (continuous)."""
    calls: list[tuple[object, list[str]]] = []
    translate, step = translator.translate, RunningSearch.step

    def spy(lines, request, *args, **kwargs):
        calls.append((request.search, list(lines)))
        return translate(lines, request, *args, **kwargs)

    def step_spy(search):
        calls.append((search.settings, [block.key for block in search.blocks]))
        return step(search)

    monkeypatch.setattr(translator, "translate", spy)
    monkeypatch.setattr(RunningSearch, "step", step_spy)
    words = sorted(WORDS)
    requests = [([f"{words[i % 17]} {words[i // 17]} {words[5 * i % 17]}"], 1 + i % 3) for i in range(50)]
    beam_of = {lines[0]: beam for lines, beam in requests}
    assert len(beam_of) == len(requests)
    answers: list[dict | None] = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def send(k: int) -> None:
        lines, beam = requests[k]
        start.wait()
        answers[k] = client.post("/translate", json={"text": lines, "beam": beam, "nbest": beam}).json()

    with make_client(translator, batching=batching) as client:
        threads = [threading.Thread(target=send, args=(k,)) for k in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    monkeypatch.undo()
    for (lines, beam), answer in zip(requests, answers, strict=True):
        alone = translator.translate(
            lines, Request.of(translator.options(DecodeOverrides(beam=beam, nbest=beam)))
        )
        assert answer["translations"] == [r.texts[0] for r in alone]
        if beam > 1:
            assert [[h["text"] for h in hyps] for hyps in answer["nbest"]] == [r.texts for r in alone]
    if batching == "static":
        assert len(calls) < len(requests) / 2, "requests arriving together are decoded in one call"
        for settings, lines in calls:  # one setting per decode call: every line in it asked for that beam
            assert {beam_of[line] for line in lines} == {settings.beam}
    else:
        assert max(len(keys) for _, keys in calls) > 3, "requests arriving together decode together"
        for settings, keys in calls:  # one setting per running batch
            assert {beam_of[request.job.lines[line]] for request, line in keys} == {settings.beam}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"text": ["a"] * 9}, 413, "9 lines; at most 8 per request (--max-lines)"),
        ({"text": ["red", "x" * 61]}, 413, "text[1]: 61 characters; at most 60 per line (--max-chars)"),
        ({"text": ["red"], "beam": 5}, 422, "at most 4 (the server's --max-beam)"),
        ({"text": ["red"], "nbest": 9}, 422, "at most 4"),
        ({"text": ["red"], "beam": 0}, 422, "beam: Input should be greater than or equal to 1"),
        ({"text": ["red\ncat"]}, 422, "holds a line break"),
        ({"text": "red cat"}, 422, "text: Input should be a valid list"),
        ({"text": ["red", 3]}, 422, "text[1]: Input should be a valid string"),
        ({"text": ["red"], "beam": "2"}, 422, "beam: Input should be a valid integer"),
        ({"text": ["red"], "bean": 2}, 422, "bean: Extra inputs are not permitted"),
        ({"beam": 2}, 422, "text: Field required"),
        ([1, 2], 422, 'send a JSON object ({"text": [...]})'),
    ],
)
def test_limits_and_invalid_requests_are_4xx_json_errors_that_say_what_to_change(
    client, body, status, message
):
    response = client.post("/translate", json=body)
    assert (response.status_code, response.headers["content-type"]) == (status, "application/json")
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("content", "headers", "status", "message"),
    [
        (b'{"text": ["red"', {}, 400, "not valid JSON"),
        (b'{"text": ["\xff\xfe"]}', {}, 400, "not valid JSON in UTF-8"),
        (b'{"text": ["\\ud800"]}', {}, 422, "text: not valid Unicode (an unpaired surrogate)"),
        (b'{"text": ["red"]}', {"content-type": "text/plain"}, 422, "Content-Type: application/json"),
        (b'{"text": ["' + b"a" * 4000 + b'"]}', {}, 413, "over 4000 bytes (the server's --max-body-bytes)"),
    ],
)
def test_malformed_and_oversized_bodies_are_refused(client, content, headers, status, message):
    response = client.post(
        "/translate", content=content, headers={"content-type": "application/json", **headers}
    )
    assert (response.status_code, message in response.json()["error"]) == (status, True)


def test_a_body_without_a_length_is_counted_as_it_arrives(client):
    chunks = (b'{"text": ["' if i == 0 else b"a" * 100 for i in range(50))
    response = client.post("/translate", content=chunks, headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_a_request_that_waits_past_the_timeout_gets_408_and_the_server_goes_on(translator):
    with make_client(translator, window_s=0.5, batching="static", timeout_s=0.1) as slow:
        response = slow.post("/translate", json={"text": ["red cat"]})
        assert response.status_code == 408
        assert "no answer within 0.1 s (the server's --timeout)" in response.json()["error"]
    with make_client(translator, window_s=0.0, timeout_s=30.0) as fine:
        assert fine.post("/translate", json={"text": ["red cat"]}).status_code == 200


def test_attention_is_the_reports_map_of_the_translation(client, translator):
    body = client.post("/attention", json={"text": "red cat runs"}).json()
    translation = client.post("/translate", json={"text": ["red cat runs"]}).json()["translations"][0]
    expected = translator.attention_map("red cat runs", translation, Request.of(translator.options()))
    assert body["translation"] == translation
    assert (body["source"], body["target"]) == (expected.source, expected.target)
    assert torch.tensor(body["weights"]) == pytest.approx(torch.from_numpy(expected.weights), abs=1e-4)
    assert torch.tensor(body["weights"]).sum(1) == pytest.approx(torch.ones(len(expected.target)), abs=1e-3)
    given = client.post("/attention", json={"text": "red cat runs", "translation": "RUNS CAT RED"}).json()
    assert given["target"] == [*translator.tokenizers.tgt.pieces("RUNS CAT RED"), "</s>"]
    assert client.post("/attention", json={"text": " "}).status_code == 422


def test_info_health_and_page(client, translator):
    info = client.get("/info").json()
    assert info["run"] == "tiny" and info["checkpoints"] == ["best.pt"]
    assert info["languages"] == {"source": "src", "target": "tgt", "targets": [], "to": ""}
    assert info["parameters"] == sum(p.numel() for p in translator.model.parameters())
    assert info["decode"]["beam"] == translator.config.decode.beam
    assert info["limits"]["max_lines"] == 8
    assert info["versions"]["torch"] == torch.__version__
    assert client.get("/health").json() == {"status": "ok", "requests": 0, "queued": 0}
    page = client.get("/")
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page.text), (
        "the page loads nothing from elsewhere"
    )
    assert '<label for="source">' in page.text


def test_no_path_reaches_a_file_and_cors_is_only_for_configured_origins(client):
    for path in (
        "/static/index.html",
        "/../pyproject.toml",
        "/%2e%2e/pyproject.toml",
        "/docs/../../etc/passwd",
    ):
        assert client.get(path).status_code == 404, path
    preflight = {"access-control-request-method": "POST", "access-control-request-headers": "content-type"}
    allowed = client.options("/translate", headers={"origin": "https://ok.example", **preflight})
    assert allowed.headers["access-control-allow-origin"] == "https://ok.example"
    other = client.post("/translate", json={"text": ["red"]}, headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers


def test_cli_errors_are_error_lines_with_exit_code_2(served_run, tmp_path, monkeypatch):
    missing = run_cli("serve", str(tmp_path / "nothing"))
    assert missing.exit_code == 2 and "error:" in missing.stderr
    taken = listen("127.0.0.1", 0)
    port = taken.getsockname()[1]
    busy = run_cli("serve", str(served_run), "--port", str(port), "--device", "cpu")
    taken.close()
    assert busy.exit_code == 2 and f"error: cannot listen on 127.0.0.1:{port}" in busy.stderr
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    no_extra = run_cli("serve", str(served_run))
    assert no_extra.exit_code == 2
    assert "error: s2s serve needs fastapi and uvicorn: pip install 's2s[serve]'" in no_extra.stderr


@pytest.mark.slow
def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(served_run):
    server = ServerProcess(served_run, "--batching", "static", "--batch-window-ms", "1500", *FP32)
    request, answer = request_in_flight(server, LINES)  # held for the 1.5 s batch window
    assert server.stop(signal.SIGTERM) == 0, "".join(server.log)
    request.join()
    assert answer[0].status_code == 200
    assert answer[0].json()["translations"] == cli_translate(served_run, LINES, *FP32)
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{server.url}/health")


@pytest.mark.parametrize("text", [[], [""], ["", "  ", "\t\u3000"]], ids=["no lines", "one empty", "blank"])
def test_an_empty_request_and_blank_lines_get_empty_answers_as_the_cli_gives(client, served_run, text):
    """No lines: no translations (200); blank lines: one empty translation each, as `s2s translate`."""
    expected = cli_translate(served_run, text) if text else []
    assert expected == [""] * len(text)
    plain = client.post("/translate", json={"text": text})
    assert plain.status_code == 200, plain.text
    assert plain.json() == {"translations": expected}
    scored = client.post("/translate", json={"text": text, "scores": True, "nbest": 2})
    assert scored.status_code == 200, scored.text
    assert scored.json() == {
        "translations": expected,
        "scores": [None] * len(text),
        "nbest": [[{"text": "", "score": None}] * 2 for _ in text],
    }


def test_target_prefixes_start_the_translations_as_translate_gives_them(client, translator):
    """One prefix per line ("" for none): each answer is what `Translator.translate` gives with those
    prefixes; lines without a prefix get their usual translation."""
    lines = ["red cat runs", "the big dog sleeps", "blue bird"]
    words = [translation.split() for translation in cli_free(client, lines)]
    prefixes = [" ".join(words[0][:1]), "", "TREE"]
    body = client.post("/translate", json={"text": lines, "prefix": prefixes, "scores": True}).json()
    settings = translator.options(DecodeOverrides(max_tokens=200)).search
    expected = translator.translate(lines, Request(settings, 200), prefixes=prefixes)
    assert body["translations"] == [r.texts[0] for r in expected]
    assert body["scores"] == pytest.approx([r.scores[0] for r in expected], abs=1e-4)
    assert body["translations"][1] == cli_free(client, lines[1:2])[0]
    assert body["translations"][2].startswith("TREE")


def cli_free(client: TestClient, lines: list[str]) -> list[str]:
    return client.post("/translate", json={"text": lines}).json()["translations"]


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        (["a"], "prefix: 1 for 2 lines of text; give one per line"),
        (["a", "b\nc"], "prefix[1]: holds a line break"),
    ],
)
def test_a_prefix_per_line_or_a_422(client, prefix, message):
    response = client.post("/translate", json={"text": ["red", "cat"], "prefix": prefix})
    assert response.status_code == 422 and message in response.json()["error"]


def test_restore_case_reads_lines_as_translate_restore_case_does(translator, served_run, monkeypatch):
    """`s2s serve --restore-case`: the model reads a shouted or titled line recased, as `s2s translate
    --restore-case` has it read, and the others as given; the answers are the translations given the
    lines' case back; a request for alignments reads the lines as given."""
    lines = ["RED CAT RUNS", "The Big Dog Sleeps Under A Tree", "blue bird", ""]
    recaser = Recaser.of_run(served_run, translator.tokenizers.src)
    recased = ["Red cat runs", "The big dog sleeps under a tree", "blue bird", ""]
    assert [recaser.line(line).text for line in lines] == recased
    read: list[str] = []
    translate = translator.translate
    monkeypatch.setattr(
        translator, "translate", lambda lines, *a, **k: read.extend(lines) or translate(lines, *a, **k)
    )
    settings = ServerSettings(
        DecodeOverrides(max_tokens=200, restore_case=True), 20.0, LIMITS, (), batching="static"
    )
    with TestClient(create_app(translator, settings, "tiny", recaser=recaser)) as client:
        body = client.post("/translate", json={"text": lines, "beam": 2, "nbest": 2}).json()
        assert set(read) == set(recased)  # every line the model read, and no line as it came
        read.clear()
        client.post("/translate", json={"text": lines[:1], "alignments": True})
        assert read == lines[:1]
    plain = translate(recased, Request.of(translator.options(DecodeOverrides(beam=2, nbest=2))))
    texts = [[h["text"] for h in hypotheses] for hypotheses in body["nbest"]]
    assert texts[0] == [t.upper() for t in plain[0].texts]
    assert texts[1] == [title(t) for t in plain[1].texts]
    assert texts[2] == plain[2].texts
