"""The reader quickstarts (configs/reader_classify.yaml, configs/reader_tag.yaml) through the CLI, in
small versions: they learn, translate, serve, report, and refuse bad label files."""

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seq2seq.data.parallel import load_eval_pairs
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.special import PAD
from tests.conftest import ROOT
from tests.helpers import run_cli

# one xdist group: the module's two trainings run once, in one process
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("readers")]


@pytest.fixture(scope="module")
def reader_data(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reader_data")
    subprocess.run(
        [sys.executable, str(ROOT / "tools/make_reader_data.py"), "--out", str(out), "--train", "2500"],
        check=True,
        capture_output=True,
    )
    return out


def majority_share(path: Path, task: str) -> float:
    labels = [
        t for line in path.read_text().splitlines() for t in (line.split() if task == "tag" else [line])
    ]
    return 100 * max(labels.count(x) for x in set(labels)) / len(labels)


@pytest.fixture(scope="module")
def reader_runs(reader_data, tmp_path_factory) -> dict[str, Path]:
    """Small versions of configs/reader_{classify,tag}.yaml (fewer steps and examples), trained
    through the CLI."""
    runs = {}
    for task in ("classify", "tag"):
        directory = tmp_path_factory.mktemp(task)
        cfg = yaml.safe_load((ROOT / f"configs/reader_{task}.yaml").read_text())
        data = reader_data / task
        cfg["run_dir"] = str(directory / "run")
        cfg["data"] |= {
            f"{split}_{side}": str(data / f"{split}.{side}")
            for split in ("train", "valid")
            for side in ("src", "tgt")
        }
        cfg["train"] |= {"max_steps": 150, "valid_every": 150, "num_threads": 1, "precision": "fp32"}
        config = directory / "config.yaml"
        config.write_text(yaml.safe_dump(cfg))
        assert (result := run_cli("train", str(config))).exit_code == 0, result.output
        runs[task] = directory / "run"
    return runs


@pytest.mark.parametrize(("task", "metric"), [("classify", "accuracy"), ("tag", "token_accuracy")])
def test_the_quickstarts_learn_far_above_the_majority_baseline(
    tmp_path, reader_data, reader_runs, task, metric
):
    run, data = reader_runs[task], reader_data / task
    assert json.loads((run / "tokenizer/labels.json").read_text())["task"] == task
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in records if r.get("kind") == "valid"]
    assert valid[-1]["valid_accuracy"] > majority_share(data / "valid.tgt", task) + 25

    out, scores = tmp_path / "test.hyp", tmp_path / "scores.json"
    args = ["--src", str(data / "test.src"), "--ref", str(data / "test.tgt"), "--out", str(out)]
    result = run_cli("evaluate", str(run), *args, "--json", str(scores))
    assert result.exit_code == 0, result.output
    score = json.loads(scores.read_text())["systems"][0]["scores"][metric]["score"]
    assert score > majority_share(data / "test.tgt", task) + 25
    hyps, sources = out.read_text().splitlines(), (data / "test.src").read_text().splitlines()
    assert len(hyps) == len(sources)
    if task == "tag":  # one tag per word
        assert sum(
            len(h.split()) == len(s.split()) for h, s in zip(hyps, sources, strict=True)
        ) >= 0.99 * len(sources)


@pytest.mark.parametrize("task", ["classify", "tag"])
def test_translate_gives_one_answer_per_line_with_its_probability(reader_runs, task):
    lines = (
        "the coach blew the whistle\n\nsoup\n"
        if task == "classify"
        else "Anna met Li .\n\nwe visited Lima .\n"
    )
    result = run_cli("translate", str(reader_runs[task]), "--scores", input=lines)
    assert result.exit_code == 0, result.output
    rows = result.output.splitlines()
    assert len(rows) == 3 and rows[1] == "\tblank"
    assert all(0 < float(row.split("\t")[1]) <= 1 for row in (rows[0], rows[2]))
    if task == "tag":
        assert [len(row.split("\t")[0].split()) for row in rows] == [4, 0, 4]
    for refused in (["--nbest", "2"], ["--checkpoint", "best", "--checkpoint", "last"]):
        result = run_cli("translate", str(reader_runs[task]), *refused, input="a\n")
        assert result.exit_code == 2 and "error:" in result.output


def test_the_server_answers_a_reader_and_refuses_what_it_cannot_do(reader_runs):
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.server_settings import Limits, ServerSettings
    from seq2seq.translate.options import DecodeOverrides
    from seq2seq.translate.placement import Placement
    from seq2seq.translate.translator import Translator

    translator = Translator.load(reader_runs["classify"], placement=Placement("cpu"))
    settings = ServerSettings(DecodeOverrides(max_tokens=200), 10, Limits(), ())
    with TestClient(create_app(translator, settings, "reader", running=translator)) as client:
        answer = client.post("/translate", json={"text": ["the coach blew the whistle", ""]})
        assert answer.status_code == 200 and answer.json()["translations"][1] == ""
        assert answer.json()["translations"][0] in {"sport", "food", "weather", "music"}
        assert client.post("/translate", json={"text": ["soup"], "nbest": 2}).status_code == 422
        assert client.post("/attention", json={"text": "soup"}).status_code == 422


def test_unseen_validation_labels_are_counted_and_left_out(reader_runs, tmp_path, caplog):
    tokenizers = load_tokenizers(reader_runs["classify"] / "tokenizer", joint=True)
    src, tgt = tmp_path / "v.src", tmp_path / "v.tgt"
    src.write_text("goal match team\nsoup bread\nsong band\n")
    tgt.write_text("sport\npoetry\nopera\n")
    with caplog.at_level(logging.WARNING):
        data, _, _ = load_eval_pairs(tokenizers, src, tgt, max_len=64)
    assert "2 labels never seen in training" in caplog.text
    assert data.tgt.sequences(range(3)) == [[tokenizers.tgt.names.index("sport") + 1], [PAD], [PAD]]


def test_a_bad_tag_file_stops_training_with_file_and_line(reader_data, tmp_path):
    bad = tmp_path / "train.tgt"
    lines = (reader_data / "tag/train.tgt").read_text().splitlines()
    lines[6] += " O"
    bad.write_text("\n".join(lines) + "\n")
    cfg = yaml.safe_load((ROOT / "configs/reader_tag.yaml").read_text())
    cfg["run_dir"] = str(tmp_path / "run")
    cfg["data"] |= {"train_src": str(reader_data / "tag/train.src"), "train_tgt": str(bad)}
    cfg["data"] |= {
        "valid_src": str(reader_data / "tag/valid.src"),
        "valid_tgt": str(reader_data / "tag/valid.tgt"),
    }
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    result = run_cli("train", str(config))
    assert result.exit_code == 2
    assert f"{bad}:7: " in result.output and "tags for the" in result.output


def test_the_report_draws_a_confusion_matrix(reader_data, reader_runs, tmp_path):
    pytest.importorskip("matplotlib")
    data = reader_data / "tag"
    args = [
        "--src",
        str(data / "valid.src"),
        "--ref",
        str(data / "valid.tgt"),
        "--report",
        str(tmp_path / "r"),
    ]
    result = run_cli("evaluate", str(reader_runs["tag"]), *args, "--out", str(tmp_path / "v.hyp"))
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r/index.html").read_text()
    assert "Confusion matrices" in page and "BLEU" not in page
