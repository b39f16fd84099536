"""The pipeline file (`seq2seq.pipeline.config`, `check_pipeline`) is checked whole before any step
runs: every unknown key (with the closest valid one), mistyped value, broken rule and run config that
does not load is reported in one error. The examples in the repository load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from seq2seq.errors import ConfigError
from seq2seq.pipeline.config import read_pipeline
from seq2seq.pipeline.plan import check_pipeline
from tests.helpers import ROOT


def pipeline(tmp_path: Path, **changes: object) -> Path:
    """A small valid pipeline (data files need not exist to be checked), with `changes` at the top."""
    raw = {
        "workspace": str(tmp_path / "ws"),
        "src_lang": "de",
        "tgt_lang": "en",
        "training": {"base": str(ROOT / "configs" / "quickstart.yaml")},
        "data": {
            "corpora": [{"name": "train", "src": "train.de", "tgt": "train.en"}],
            "valid": {"src": "val.de", "tgt": "val.en"},
            "test": [{"name": "test", "src": "test.de", "tgt": "test.en"}],
            "mono_tgt": "mono.en",
        },
        "steps": {"backward": {}, "back_translation": {"lines": 10}},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(raw | changes), encoding="utf-8")
    return path


def problems(path: Path) -> str:
    with pytest.raises(ConfigError) as e:
        check_pipeline(read_pipeline(path))
    return str(e.value)


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*pipeline*.yaml")), ids=lambda p: p.name)
def test_the_examples_load(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # their paths are the repository's
    check_pipeline(read_pipeline(example))


def test_a_valid_file_loads(tmp_path: Path) -> None:
    check_pipeline(read_pipeline(pipeline(tmp_path)))


def test_every_unknown_key_is_named_with_the_closest_one_at_once(tmp_path: Path) -> None:
    path = pipeline(tmp_path, workspce="x", steps={"techer": {}, "filter": {"kep": 0.5}})
    message = problems(path)
    assert message.startswith(f"invalid pipeline {path}")
    for expected in (
        "workspce: unknown key (did you mean workspace?)",
        "steps.techer: unknown key (did you mean steps.teacher?)",
        "steps.filter.kep: unknown key (did you mean steps.filter.keep?)",
    ):
        assert expected in message


def test_every_broken_rule_is_reported_at_once(tmp_path: Path) -> None:
    steps = {"filter": {"keep": 2}, "select": {"length_penalties": [-1], "checkpoints": ["bets"]}}
    message = problems(pipeline(tmp_path, tgt_lang="", steps=steps))
    for expected in (
        "tgt_lang: '' is not a language code",
        "steps.filter: filters what steps.distillation makes",
        "steps.filter: scores with steps.backward's model",
        "steps.filter.keep: must be in (0, 1]",
        "steps.select.checkpoints: bets: choose among best, last, averaged",
        "steps.select.length_penalties: each in [0, 10]",
    ):
        assert expected in message


@pytest.mark.parametrize(
    ("weights", "backward", "expected"),
    [
        ([0.2], False, "steps.select.rerank_weights: a second model reranks the teacher's beam: give "),
        ([0], True, "steps.select.rerank_weights: each in (0, 100]"),
        ([-0.5, 0.2], True, "steps.select.rerank_weights: each in (0, 100]"),
        ([101], True, "steps.select.rerank_weights: each in (0, 100]"),
        ([0.2, 0.2], True, "steps.select.rerank_weights: one named twice"),
    ],
)
def test_rerank_weights_need_the_backward_model_and_each_a_new_positive_weight(
    tmp_path: Path, weights: list[float], backward: bool, expected: str
) -> None:
    steps = {"backward": {}} if backward else {}
    assert expected in problems(pipeline(tmp_path, steps=steps | {"select": {"rerank_weights": weights}}))
    good = pipeline(tmp_path, steps={"backward": {}, "select": {"rerank_weights": [0.1, 0.2]}})
    check_pipeline(read_pipeline(good))


def test_a_right_to_left_model_reranks_in_place_of_the_backward_model_and_only_reranks(
    tmp_path: Path,
) -> None:
    twin = {"right_to_left": {}}
    check_pipeline(read_pipeline(pipeline(tmp_path, steps=twin | {"select": {"rerank_weights": [0.2]}})))
    expected = "steps.right_to_left: it reranks the teacher's beam: give steps.select.rerank_weights"
    assert expected in problems(pipeline(tmp_path, steps=twin))


@pytest.mark.parametrize(
    ("steps", "weights", "expected"),
    [
        ({"backward": {}}, [0.2], "steps.select.backward_weights: the backward model reranks beside the "),
        ({"right_to_left": {}}, [0.2], "give steps.backward and steps.right_to_left"),
        ({"backward": {}, "right_to_left": {}}, [0], "steps.select.backward_weights: each in (0, 100]"),
        ({"backward": {}, "right_to_left": {}}, [101], "steps.select.backward_weights: each in (0, 100]"),
        ({"backward": {}, "right_to_left": {}}, [0.1, 0.1], "steps.select.backward_weights: one named twice"),
    ],
)
def test_the_backward_model_reranks_beside_the_right_to_left_model_only_where_both_are_trained(
    tmp_path: Path, steps: dict[str, object], weights: list[float], expected: str
) -> None:
    select = {"rerank_weights": [2.0], "backward_weights": weights}
    assert expected in problems(pipeline(tmp_path, steps=steps | {"select": select}))
    both = {"backward": {}, "right_to_left": {}}
    good = both | {"select": select | {"backward_weights": [0.2]}}
    check_pipeline(read_pipeline(pipeline(tmp_path, steps=good)))


@pytest.mark.parametrize(
    ("student", "expected"),
    [
        ({"beams": [0, 5]}, "steps.student.beams: each in [1, "),
        ({"beams": [1, 1000]}, "steps.student.beams: each in [1, "),
        ({"beams": [1, 5, 1]}, "steps.student.beams: one named twice"),
        ({"within": -0.1}, "steps.student.within: must be in [0, 100]"),
        ({"within": ".nan"}, "steps.student.within: must be a finite number"),
        ({"within": 101}, "steps.student.within: must be in [0, 100]"),
    ],
)
def test_the_students_beams_are_each_a_new_beam_and_its_margin_a_bleu_difference(
    tmp_path: Path, student: dict[str, object], expected: str
) -> None:
    distilled = {"distillation": {}}
    raw = {k: float("nan") if v == ".nan" else v for k, v in student.items()}
    assert expected in problems(pipeline(tmp_path, steps=distilled | {"student": raw}))
    good = pipeline(tmp_path, steps=distilled | {"student": {"beams": [1, 2, 5], "within": 0.3}})
    check_pipeline(read_pipeline(good))


def test_the_corpora_are_checked_as_a_run_config_checks_them(tmp_path: Path) -> None:
    data = yaml.safe_load(pipeline(tmp_path).read_text())["data"]
    data["corpora"][0] |= {"weight": 0, "tag": "<x>"}
    message = problems(pipeline(tmp_path, data=data))
    assert (
        "data.corpora[0].weight: must be > 0" in message
        and "data.corpora[0].tag: <x> is not declared" in message
    )


def test_each_training_whose_run_config_does_not_load_is_named(tmp_path: Path) -> None:
    path = pipeline(
        tmp_path, training={"base": str(ROOT / "configs" / "quickstart.yaml"), "set": ["train.lrr=1"]}
    )
    message = problems(path)
    for step in ("backward", "teacher"):
        assert f"steps.{step}: train.lrr: unknown key (did you mean train.lr?)" in message
