"""From a pipeline file to its steps (`seq2seq.pipeline.plan`): the steps in order, each command one
the s2s command line takes, placeholders until a choice is made and its values after, an ensemble's
members sharing the first one's tokenizer with seeds of their own, the student's beam chosen on val
among its own."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml

from seq2seq.cli import app
from seq2seq.evaluation.selection import Candidate, write_selection
from seq2seq.pipeline.config import read_pipeline
from seq2seq.pipeline.plan import make_plan
from seq2seq.pipeline.step import Action, Training
from seq2seq.pipeline.table import markdown
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "quickstart_pipeline.yaml"


def example(tmp_path: Path, **steps: object) -> Path:
    """The quickstart example with its workspace in `tmp_path` and `steps` changed."""
    raw = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    raw["workspace"] = str(tmp_path / "ws")
    raw["training"]["base"] = str(ROOT / raw["training"]["base"])
    raw["steps"] |= steps
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def choose(ws: Path, select: str, runs: list[str], rerank: str = "", weight: float = 0.0) -> None:
    """What `s2s select` would record: each run's best.pt, length penalty 0.6 (its beam reranked by
    `rerank` at `weight`, if given)."""
    files = tuple(str(ws / run / "checkpoints" / "best.pt") for run in runs)
    reranked = ((rerank,), (weight,)) if rerank else ((), ())
    chosen = Candidate(files, 2, 0.6, 12.5, "sig", ("r.json",), *reranked)
    write_selection(ws / select / "selection.json", [chosen])


def test_the_steps_come_in_order_and_wait_for_the_choices(tmp_path: Path) -> None:
    plan = make_plan(read_pipeline(example(tmp_path)))
    assert [s.name for s in plan.steps] == [
        "backward", "back_translation", "teacher", "select_teacher", "distillation", "filter", "student",
        "select_student", "export", "evaluate",
    ]  # fmt: skip
    pending = {s.name: s.pending for s in plan.steps}
    assert pending["distillation"] == pending["student"] == "select_teacher"
    assert pending["export"] == "select_student"
    assert "{select_teacher.length_penalty}" in plan.steps[4].commands[1].args


def test_once_chosen_every_command_is_one_the_command_line_takes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    choose(ws, "select_teacher", ["teacher"])
    choose(ws, "select_student", ["student"])
    plan = make_plan(read_pipeline(example(tmp_path)))
    verbs = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for step in plan.steps:
        assert not step.pending
        for command in step.commands:  # parsed as `s2s VERB ARGS` would be: an error on what it does not take
            verbs[command.verb.value].make_context(command.verb.value, list(command.args))
    distil = plan.steps[4].commands[1].args
    assert str(ws / "teacher" / "checkpoints" / "best.pt") in distil and "0.6" in distil


def test_an_ensembles_members_share_the_first_ones_tokenizer_with_seeds_of_their_own(tmp_path: Path) -> None:
    plan = make_plan(read_pipeline(example(tmp_path, teacher={"ensemble": 3})))
    members = [s for s in plan.steps if s.name.startswith("teacher")]
    assert [s.name for s in members] == ["teacher_1", "teacher_2", "teacher_3"]
    configs = [s.kind.asked for s in members if isinstance(s.kind, Training)]
    assert [c.train.seed for c in configs] == [1, 2, 3]
    assert [c.train.tokenizer_from for c in configs] == [
        "",
        *[str((tmp_path / "ws" / "teacher_1").resolve())] * 2,
    ]
    select = next(s for s in plan.steps if s.name == "select_teacher")
    assert sum(arg == "--checkpoint" for arg in select.commands[3].args) == 3  # the ensemble decodes together


def test_a_pipeline_without_optional_steps_trains_chooses_and_scores_the_teacher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the example's corpora, relative to where the pipeline runs
    for name in ("train", "valid", "test"):
        for side in ("src", "tgt"):
            (tmp_path / "data" / "quickstart").mkdir(parents=True, exist_ok=True)
            (tmp_path / "data" / "quickstart" / f"{name}.{side}").write_text("1\n", encoding="utf-8")
    path = example(tmp_path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["steps"] = {}
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    plan = make_plan(read_pipeline(path))
    assert [s.name for s in plan.steps] == ["teacher", "select_teacher", "evaluate"]
    assert [s.decide(None, False, tmp_path).action for s in plan.steps] == [
        Action.RUN,
        Action.WAIT,
        Action.WAIT,
    ]


@pytest.mark.parametrize("shrink", [True, False])
def test_a_shrunk_student_is_its_teacher_but_for_the_layers(tmp_path: Path, shrink: bool) -> None:
    choose(tmp_path / "ws", "select_teacher", ["teacher"])
    plan = make_plan(
        read_pipeline(example(tmp_path, student={"shrink": shrink, "set": ["model.decoder_layers=1"]}))
    )
    kinds = {s.name: s.kind for s in plan.steps if isinstance(s.kind, Training)}
    teacher, student = kinds["teacher"].asked, kinds["student"].asked
    assert (student.tokenizer == teacher.tokenizer) == shrink  # <bt>, declared for the teacher
    assert student.model.decoder_layers == 1 and teacher.model.decoder_layers == 2
    assert student.train.init_from == (
        str(tmp_path / "ws" / "teacher" / "checkpoints" / "best.pt") if shrink else ""
    )


@pytest.mark.parametrize("reranked", [True, False])
def test_the_teacher_alone_may_be_reranked_by_the_backward_model_as_val_chose(
    tmp_path: Path, reranked: bool
) -> None:
    ws = tmp_path / "ws"
    select = {"checkpoints": ["best", "averaged"], "length_penalties": [1.0], "beam": 2}
    path = example(tmp_path, select=select | {"rerank_weights": [0.3, 0.6]})
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}
    evaluations = [c.args for c in steps["select_teacher"].commands if c.verb.value == "evaluate"]
    weights = [a[a.index("--rerank-weight") + 1] if "--rerank" in a else None for a in evaluations]
    assert weights == [None, "0.3", "0.6"] * 2  # each checkpoint and penalty: the beam, then reranked
    assert all(a[a.index("--rerank") + 1] == str(ws / "backward") for a in evaluations if "--rerank" in a)
    assert ws / "backward" / "finished.json" in steps["select_teacher"].reads
    assert not any("--rerank" in c.args for c in steps["select_student"].commands)
    backward, weight = (str(ws / "backward"), 0.6) if reranked else ("", 0.0)
    choose(ws, "select_teacher", ["teacher"], backward, weight)
    choose(ws, "select_student", ["student"])
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}
    verbs = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    flags = ["--rerank", str(ws / "backward"), "--rerank-weight", "0.6"]
    for name, command in [("distillation", 1), ("evaluate", 0)]:  # the teacher's translations
        verb, args = steps[name].commands[command].verb.value, list(steps[name].commands[command].args)
        verbs[verb].make_context(verb, list(args))  # a command line the CLI takes
        assert ("--rerank" in args) == reranked
        assert not reranked or args[args.index("--rerank") :][:4] == flags
    for command in steps["evaluate"].commands[1:]:  # the student and its export decode alone
        assert "--rerank" not in command.args


def test_a_right_to_left_twin_of_the_teacher_reranks_its_beam_in_place_of_the_backward_model(
    tmp_path: Path,
) -> None:
    """`steps.right_to_left` trains the teacher's config, data and tokenizer written right to left,
    after the teacher and before the choice, and it, not the backward model, reranks the teacher."""
    ws = tmp_path / "ws"
    select = {"checkpoints": ["best"], "length_penalties": [1.0], "beam": 2, "rerank_weights": [0.5]}
    path = example(tmp_path, select=select, right_to_left={"set": ["train.max_steps=7"]})
    plan = make_plan(read_pipeline(path))
    names = [s.name for s in plan.steps]
    assert names.index("teacher") < names.index("right_to_left") < names.index("select_teacher")
    steps = {s.name: s for s in plan.steps}
    kinds = {name: s.kind.asked for name, s in steps.items() if isinstance(s.kind, Training)}
    twin, teacher = kinds["right_to_left"], kinds["teacher"]
    assert twin.model.right_to_left and not teacher.model.right_to_left
    assert twin.train.tokenizer_from == str((ws / "teacher").resolve())
    assert (twin.data, twin.tokenizer) == (teacher.data, teacher.tokenizer)  # <bt> pairs and the tag too
    assert twin.train.max_steps == 7
    assert ws / "teacher" / "tokenizer" in steps["right_to_left"].reads
    evaluations = [c.args for c in steps["select_teacher"].commands if c.verb.value == "evaluate"]
    reranked = [a[a.index("--rerank") + 1] for a in evaluations if "--rerank" in a]
    assert reranked == [str(ws / "right_to_left")] and ws / "right_to_left" / "finished.json" in (
        steps["select_teacher"].reads
    )


def test_the_students_beam_is_chosen_on_val_among_its_own_within_its_margin(tmp_path: Path) -> None:
    """`student.beams` are candidates beside each checkpoint and length penalty (the teacher keeps the
    select step's beam), `student.within` goes to `s2s select`; until the student's choice its beam
    is a placeholder, after it the student decodes with the beam chosen and the export keeps it (and
    the length penalty) as its decode defaults, which its evaluation then decodes with."""
    ws = tmp_path / "ws"
    choose(ws, "select_teacher", ["teacher"])
    select = {"checkpoints": ["best", "averaged"], "length_penalties": [0.6, 1.0], "beam": 3}
    path = example(tmp_path, select=select, student={"beams": [1, 4], "within": 0.5})
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}

    def beams(step: str) -> list[str | None]:
        found = [c.args for c in steps[step].commands if c.verb.value == "evaluate"]
        return [a[a.index("--beam") + 1] if "--beam" in a else None for a in found]

    assert beams("select_teacher") == ["3"] * 4
    assert beams("select_student") == ["1", "1", "4", "4"] * 2  # each checkpoint: each beam, each penalty
    records = [c.args[0] for c in steps["select_student"].commands if c.verb.value == "select"]
    assert len(set(records)) == 1 and records[0].endswith("_beam1_lp0.6.json")
    chooses = next(c.args for c in steps["select_student"].commands if c.verb.value == "select")
    assert chooses[-2:] == ("--within", "0.5") and len(set(chooses[:8])) == 8
    assert "{select_student.beam}" in beams("evaluate")
    (export,) = steps["export"].commands
    assert export.args[-4:] == (
        "--beam",
        "{select_student.beam}",
        "--length-penalty",
        "{select_student.length_penalty}",
    )
    choose(ws, "select_student", ["student"])  # beam 2, length penalty 0.6
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}
    assert beams("evaluate") == ["2", "2", None]  # the teacher, the student; the export as it was made:
    (export,) = steps["export"].commands
    assert export.args[-4:] == ("--beam", "2", "--length-penalty", "0.6")
    verbs = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for command in (*steps["evaluate"].commands, export):
        verbs[command.verb.value].make_context(command.verb.value, list(command.args))


def test_with_both_reverse_models_val_tries_each_pair_of_weights_and_the_choice_reranks_with_both(
    tmp_path: Path,
) -> None:
    """`select.backward_weights` beside a right-to-left model: each checkpoint and length penalty is
    tried plain, by each model alone at each of its weights and by both at each pair, each pair its
    own record; the teacher as chosen then translates with both runs and their two weights."""
    ws = tmp_path / "ws"
    select = {"checkpoints": ["best"], "length_penalties": [1.0], "beam": 2}
    select |= {"rerank_weights": [1.0, 3.0], "backward_weights": [0.2]}
    path = example(tmp_path, select=select, right_to_left={})
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}
    evaluations = [c.args for c in steps["select_teacher"].commands if c.verb.value == "evaluate"]
    twin, backward = str(ws / "right_to_left"), str(ws / "backward")

    def reranking(args: tuple[str, ...]) -> list[tuple[str, str]]:
        runs = [args[i + 1] for i, a in enumerate(args) if a == "--rerank"]
        weights = [args[i + 1] for i, a in enumerate(args) if a == "--rerank-weight"]
        return list(zip(runs, weights, strict=True))

    assert [reranking(a) for a in evaluations] == [
        [], [(backward, "0.2")], [(twin, "1")], [(twin, "1"), (backward, "0.2")], [(twin, "3")],
        [(twin, "3"), (backward, "0.2")],
    ]  # fmt: skip
    records = [a[a.index("--json") + 1] for a in evaluations]
    assert len(set(records)) == len(records)
    assert {ws / run / "finished.json" for run in ("right_to_left", "backward")} <= set(
        steps["select_teacher"].reads
    )
    files = (str(ws / "teacher" / "checkpoints" / "best.pt"),)
    both = Candidate(files, 2, 1.0, 12.5, "sig", ("r.json",), (twin, backward), (3.0, 0.2))
    write_selection(ws / "select_teacher" / "selection.json", [both])
    steps = {s.name: s for s in make_plan(read_pipeline(path)).steps}
    verbs = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name, command in [("distillation", 1), ("evaluate", 0)]:
        args = steps[name].commands[command].args
        verbs[steps[name].commands[command].verb.value].make_context("s2s", list(args))
        assert reranking(args) == [(twin, "3"), (backward, "0.2")]
    assert {ws / run / "finished.json" for run in ("right_to_left", "backward")} <= set(
        steps["distillation"].reads
    )


def test_the_table_says_how_each_model_was_reranked_if_it_was():
    """The chosen column of table.md: nothing for a plain beam, the run and weight of one reranking
    run, each run with its weight of several."""
    row = {"model": "teacher", "test": "test", "engine": "s2s", "checkpoints": ["best.pt"], "beam": 5}
    row |= {"length_penalty": 1.0, "val_bleu": 40.0, "bleu": 39.5, "chrf": 60.0}
    row |= {"sentences_per_second": 50.0, "parameters": 1000}
    data = {"signatures": {}}
    for runs, weight, chosen in [
        ("", None, "best.pt, 5, 1 (40.00)"),
        ("backward", 0.2, "best.pt, 5, 1, reranked by backward 0.2 (40.00)"),
    ]:
        assert f"| {chosen} |" in markdown(data | {"rows": [row | {"rerank": runs, "rerank_weight": weight}]})
    several = row | {"rerank": ["right_to_left", "backward"], "rerank_weight": [2.0, 0.6]}
    assert "| best.pt, 5, 1, reranked by right_to_left 2, backward 0.6 (40.00) |" in markdown(
        data | {"rows": [several]}
    )
