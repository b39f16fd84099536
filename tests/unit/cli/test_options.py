"""A command's options are its jobs' fields: what a command line asks is the job it builds, a job's
command line (`flags.argv`, what the pipeline runs) builds that job again, and every decode and
direction option is declared once, in its dataclass."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

from seq2seq.cli import app
from seq2seq.cli.expansion import build
from seq2seq.commands.filter import FilterJob, FilterRules
from seq2seq.commands.jobs import (
    AverageJob,
    EvaluateJob,
    ExportJob,
    ScoreJob,
    ServeJob,
    Streams,
    TranslateJob,
)
from seq2seq.evaluation.evaluate_files import EvaluateFiles
from seq2seq.evaluation.metric_options import MetricOptions
from seq2seq.evaluation.selection import SelectJob
from seq2seq.flags import argv, leaves
from seq2seq.serve.server_settings import Limits, ServerSettings
from seq2seq.training.jobs import ConfigArgs, PrepareJob, TrainJob
from seq2seq.translate.aligned import Annotations
from seq2seq.translate.direction import Direction
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from tests.helpers import ROOT, run_cli

RUN = Path("run")
SEARCH = DecodeOverrides(
    beam=3,
    length_penalty=0.6,
    length_norm="gnmt",
    patience=1.5,
    max_len_a=1.25,
    max_len_b=7,
    min_len=1,
    no_repeat_ngram=3,
    max_tokens=99,
    checkpoints=("a.pt", "b.pt"),
)
# (command, job as the command takes it): every option of every command set away from its default
JOBS: list[tuple[str, Any]] = [
    ("translate", TranslateJob(RUN)),
    ("translate run", Streams(Path("in.txt"), Path("out.txt"))),
    (
        "translate",
        TranslateJob(
            RUN,
            dataclasses.replace(SEARCH, nbest=2),
            Placement("cpu", "fp32", "int8"),
            "s2s",
            True,
            True,
            Direction("fr", "<bt>", "en"),
            Path("prefixes.txt"),
            True,
            Annotations(True, "html"),
        ),
    ),
    (
        "translate",
        TranslateJob(RUN, DecodeOverrides(sampling=True, temperature=0.7, top_k=5, top_p=0.9, seed=3)),
    ),
    (
        "evaluate",
        EvaluateJob(
            EvaluateFiles(
                RUN, (Path("h1"), Path("h2")), (Path("r"),), Path("s"), Path("o"), Path("j"), Path("d")
            ),
            MetricOptions("intl", True, True),
            50,
            "upper,typos",
            5,
            "translate",
            SEARCH,
            Placement("cuda:1", "bf16"),
            "ctranslate2",
            Direction("de", "", "en"),
        ),
    ),
    (
        "score",
        ScoreJob(
            RUN,
            Path("s"),
            Path("t"),
            None,
            Path("rev"),
            True,
            Direction("fr", "<bt>"),
            "de",
            DecodeOverrides(max_tokens=5, checkpoints=("best",)),
            Placement("cpu", "fp32"),
            Path("o"),
        ),
    ),
    ("score", ScoreJob(RUN, Path("s"), nbest=Path("n"))),
    ("average", AverageJob(RUN, 3, "avg")),
    ("export", ExportJob(RUN, Path("out"), "huggingface", "last", "int8", True, 20, 7)),
    (
        "serve",
        ServeJob(
            RUN,
            "0.0.0.0",
            0,
            ServerSettings(
                SEARCH,
                20.0,
                Limits(3, 4, 5, 6.5, 7),
                ("*", "https://a.example"),
                Direction("fr"),
                "s2s",
                "static",
            ),
            Placement("cpu", "fp32", "int8", 2),
            True,
        ),
    ),
    (
        "filter",
        FilterJob(
            (Path("a"), Path("b")),
            Path("o"),
            (Path("c"), Path("d")),
            Path("p"),
            FilterRules((Path("x"),), True, Path("sc"), 0.5, 10),
        ),
    ),
    ("select", SelectJob((Path("a.json"), Path("b.json")), Path("choice.json"))),
    ("train", TrainJob(ConfigArgs(Path("c.yaml"), ("train.lr=1", "run_dir=x")), True, True, True, "cpu")),
    ("prepare", PrepareJob(ConfigArgs(Path("c.yaml"), ("a=1",)), 3, True, 2, Path("f.png"))),
]


def parsed(command: str, args: tuple[str, ...]) -> dict[str, Any]:
    """The flat options click parses from `s2s COMMAND ARGS`, as the command receives them."""
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return click_command.make_context(command, list(args)).params


@pytest.mark.parametrize(("command", "job"), JOBS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(JOBS)])
def test_a_jobs_command_line_builds_the_same_job(command: str, job: Any) -> None:
    command, *before = command.split()  # arguments another group of the command holds
    args = (*before, *argv(job))
    assert build(type(job), parsed(command, args)) == job, args


def test_an_option_left_out_keeps_the_default_of_its_group_not_a_namesake():
    # `s2s evaluate --seed` seeds --augment; the decode options' sampling seed is not evaluate's
    job = build(EvaluateJob, parsed("evaluate", ("run", "--src", "s", "--ref", "r", "--seed", "9")))
    assert job.seed == 9 and job.asked.seed is None and job.asked == DecodeOverrides()


def test_a_default_job_is_written_as_its_arguments_alone():
    assert argv(TranslateJob(RUN)) == ("run",)
    assert argv(ExportJob(RUN, Path("out"))) == ("run", "out")


def test_a_placeholder_stands_for_a_value_known_later():
    job = TranslateJob(RUN, DecodeOverrides(beam=5, checkpoints=("{choice.checkpoint}",)))
    assert argv(job, {"length_penalty": "{choice.length_penalty}"}) == (
        "run",
        "--beam",
        "5",
        "--length-penalty",
        "{choice.length_penalty}",
        "--checkpoint",
        "{choice.checkpoint}",
    )


def test_every_option_is_declared_once():
    """An option of one spelling and help (a decode option shared by translate, evaluate, score and
    serve) comes from one field of one dataclass, and the command line's modules spell no decode
    option of their own."""
    declared: dict[tuple[str, str], set[int]] = {}  # an option declared once has one `Flag`
    for _, job in JOBS:
        for leaf in leaves(type(job)):
            declared.setdefault((leaf.spelling, leaf.flag.help), set()).add(id(leaf.flag))
    assert [spelling for (spelling, _), fields in declared.items() if len(fields) > 1] == []
    cli = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "seq2seq" / "cli").glob("*.py"))
    for field in dataclasses.fields(DecodeOverrides):  # no option or parameter of that name there
        spelling = leaves_by_name(DecodeOverrides)[field.name]
        assert f'Option("{spelling}"' not in cli and not re.search(rf"\b{field.name}: ", cli), field.name


def leaves_by_name(cls: type) -> dict[str, str]:
    return {leaf.name: leaf.spelling for leaf in leaves(cls)}


def test_exports_former_spelling_of_its_format_is_refused_with_advice(tiny_run, tmp_path: Path):
    run, out = str(tiny_run.run), tmp_path / "out"
    result = run_cli("export", run, str(out), "--to", "ctranslate2")
    assert result.exit_code == 2 and not out.exists()
    advice = re.search(r"^error: s2s export names its format with (--format \S+)", result.output, re.M)
    assert advice is not None, result.output
    followed = run_cli("export", run, str(out), *advice.group(1).split())
    assert followed.exit_code == 0 and (out / "model.bin").is_file(), followed.output
