"""Every verb works for every family it accepts, or refuses it cleanly: exit code 2 and an `error:`
line, never a traceback. The families: an encoder-decoder, a decoder-only translator, and the
encoder-only readers (classify, tag); the verbs: fine-tuning (train.init_from), translate, evaluate,
score, export (CTranslate2, Hugging Face), average and serve."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.conftest import TrainedRun
from tests.helpers import run_cli

FAMILIES = {"encoder_decoder": "tiny", "decoder_only": "decoder_only", "classify": "classify", "tag": "tag"}
LINES = ["red cat runs", "", "the big dog sleeps on a tree"]
READERS = ("classify", "tag")
# what a family cannot do, and so refuses: a reader gives no target a log-probability, and only an
# encoder-decoder has a layout CTranslate2 and Hugging Face's classes hold
REFUSED = {("score", family) for family in READERS} | {
    (export, family) for export in ("export_ct2", "export_hf") for family in ("decoder_only", *READERS)
}


def fine_tune(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    new = tmp_path / "fine_tuned"
    overrides = [f"run_dir={new}", f"train.init_from={run.run}", "train.max_steps=1", "train.valid_every=1"]
    result = run_cli("train", str(run.config), *(arg for o in overrides for arg in ("--set", o)))
    return result, (new / "checkpoints" / "last.pt").is_file()


def translate(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    result = run_cli("translate", str(run.run), "--device", "cpu", input="\n".join(LINES) + "\n")
    return result, len(result.stdout.splitlines()) == len(LINES)


def evaluate(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    out, report = tmp_path / "valid.hyp", tmp_path / "report"
    pairs = ["--src", str(run.data / "valid.src"), "--ref", str(run.data / "valid.tgt")]
    result = run_cli(
        "evaluate", str(run.run), *pairs, "--out", str(out), "--report", str(report), "--device", "cpu"
    )
    hyps = out.read_text(encoding="utf-8").splitlines() if out.is_file() else []
    return result, len(hyps) == 20 and (report / "index.html").is_file()


def score(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    pairs = ["--src", str(run.data / "valid.src"), "--tgt", str(run.data / "valid.tgt")]
    result = run_cli("score", str(run.run), *pairs, "--device", "cpu")
    return result, len(result.stdout.splitlines()) == 20


def export_to(to: str, made: str) -> Callable[..., tuple[Result, bool]]:
    def export(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
        out = tmp_path / "export"
        result = run_cli("export", str(run.run), str(out), "--format", to)
        return result, (out / made).is_file()

    return export


def average(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    out = tmp_path / "averaged.pt"  # outside the shared run, which stays as it is
    result = run_cli("average", str(run.run), "--output", str(out))
    return result, out.is_file()


def serve(run: TrainedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, bool]:
    """`s2s serve` as the command line starts it, the server itself answering one request in-process."""
    from fastapi.testclient import TestClient

    answers: list[Any] = []

    def answer_once(application: Any, sock: Any, access_log: bool, timeout: float) -> None:
        sock.close()
        application.state.batcher.start()  # where `run_server` decodes on this thread
        with TestClient(application) as client:
            answers.append(client.post("/translate", json={"text": LINES}))

    monkeypatch.setattr("seq2seq.serve.server.run", answer_once)
    result = run_cli("serve", str(run.run), "--port", "0", "--device", "cpu")
    served = bool(answers) and answers[0].status_code == 200
    return result, served and len(answers[0].json()["translations"]) == len(LINES)


VERBS: dict[str, Callable[..., tuple[Result, bool]]] = {
    "fine_tune": fine_tune,
    "translate": translate,
    "evaluate": evaluate,
    "score": score,
    "export_ct2": export_to("ctranslate2", "model.bin"),
    "export_hf": export_to("huggingface", "model.safetensors"),
    "average": average,
    "serve": serve,
}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "verb", [pytest.param(v, marks=pytest.mark.slow) if v == "fine_tune" else v for v in VERBS]
)
def test_a_verb_works_for_a_family_or_refuses_it_with_an_error_line(
    trained_run: Callable[[str], TrainedRun],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    family: str,
) -> None:
    result, done = VERBS[verb](trained_run(FAMILIES[family]), tmp_path, monkeypatch)
    assert "Traceback" not in result.output
    if (verb, family) in REFUSED:
        assert result.exit_code == 2, result.output
        assert "error: " in result.output and not done
    else:
        assert result.exit_code == 0, result.output
        assert done, result.output


@pytest.mark.parametrize("family", ["classify", "tag"])
def test_a_reader_s_score_advises_evaluate_which_scores_its_answers(
    trained_run: Callable[[str], TrainedRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str
) -> None:
    run = trained_run(FAMILIES[family])
    refused, _ = VERBS["score"](run, tmp_path, monkeypatch)
    assert refused.exit_code == 2 and "`s2s evaluate`" in refused.output, refused.output
    result, done = evaluate(run, tmp_path, monkeypatch)
    assert result.exit_code == 0 and done, result.output
