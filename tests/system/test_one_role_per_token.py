"""A token has one role. A language token (`<2de>`) comes only from a language code: `--to de`, a
request's `"to": "de"`; a tag only from the control tokens the run's config declares
(`tokenizer.control_tokens`). Every verb that puts tokens before a source refuses a language token
given as a tag, or as the language itself, saying which code to ask for, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seq2seq.serve.app import create_app
from seq2seq.serve.server_settings import ServerSettings
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import run_cli

VERBS = ["translate", "evaluate", "score", "serve"]


def refusal(verb: str, run: TrainedRun, out: Path, *asked: str) -> tuple[bool, str]:
    """Whether VERB refused the multilingual `run` given `asked` (`--to`/`--tag` options; a request's
    fields for serve), and its error message."""
    src, tgt = str(run.data / "valid.src"), str(run.data / "valid.tgt")
    options = dict(zip(asked[0::2], asked[1::2], strict=True))
    if verb == "serve":
        translator = Translator.load(run.run, placement=Placement("cpu", "fp32"))
        settings = ServerSettings(DecodeOverrides(max_tokens=200), 20)
        with TestClient(create_app(translator, settings, "multilingual", running=translator)) as client:
            request = {"text": ["red cat"], "to": options["--to"]}
            response = client.post("/translate", json=request)
        return response.status_code == 422, response.json().get("error", "")
    args = {
        "translate": ["translate", str(run.run), "-i", src, "-o", str(out)],
        "evaluate": ["evaluate", str(run.run), "--src", src, "--ref", tgt, "--out", str(out)],
        "score": ["score", str(run.run), "--src", src, "--tgt", tgt, "-o", str(out)],
    }[verb]
    result = run_cli(*args, "--device", "cpu", *asked)
    return result.exit_code == 2 and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("verb", VERBS)
def test_a_language_token_is_asked_for_by_its_code_only(multilingual_run, tmp_path, verb):
    """`--tag <2de>` (serve: a request's `"to": "<2de>"`) would start each source with two language
    tokens, or with the token as the language's code: refused, naming the code to give instead."""
    asked = ("--to", "<2de>") if verb == "serve" else ("--to", "en", "--tag", "<2de>")
    refused, message = refusal(verb, multilingual_run, tmp_path / "out", *asked)
    assert refused, message
    assert "<2de> is the language token of de" in message
    assert ("by its code, with to de" if verb == "serve" else "choose the language with --to de") in message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("verb", ["translate", "evaluate", "score"])
def test_a_tag_is_one_the_run_s_config_declares(multilingual_run, tmp_path, verb):
    refused, message = refusal(verb, multilingual_run, tmp_path / "out", "--to", "en", "--tag", "<bt>")
    assert refused, message
    assert "--tag <bt>: not a corpus tag of this run" in message and "declares: none" in message
    assert not (tmp_path / "out").exists()
