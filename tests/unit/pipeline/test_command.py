"""A step's command line (`seq2seq.pipeline.command`): shown as a person types it, its mode apart
from its settings, and the difference of two settings named option by option."""

from __future__ import annotations

import shlex

from seq2seq.pipeline.command import Command, Start, Verb, differences


def test_shown_is_the_command_that_runs_and_the_mode_is_no_setting() -> None:
    command = Command(
        Verb.TRAIN, ("c.yaml", "--set", "data.corpora=[{a: 1}]"), resume=("--resume",), again=("--overwrite",)
    )
    assert command.starting(Start.NEW).mode == ()
    continued = command.starting(Start.CONTINUE)
    assert shlex.split(continued.shown()) == ["python", "-m", "seq2seq", "train", *command.args, "--resume"]
    assert continued.argv()[1:] == ["-m", "seq2seq", "train", *command.args, "--resume"]
    assert continued.settings == command.starting(Start.AGAIN).settings == ["train", *command.args]
    launched = Command(Verb.TRAIN, ("c.yaml",), launcher=("torchrun", "--nproc_per_node=2"))
    assert launched.argv() == ["torchrun", "--nproc_per_node=2", "-m", "seq2seq", "train", "c.yaml"]


def test_differences_name_each_option() -> None:
    before = ["translate", "run", "--beam", "5", "--set", "train.lr=1", "--set", "a.b=2", "--sampling"]
    now = ["translate", "run", "--beam", "4", "--set", "train.lr=1", "--set", "a.b=3", "-i", "x"]
    assert differences(before, now) == [
        "--beam: 5 -> 4",
        "--sampling: (on) -> (none)",
        "--set a.b: 2 -> 3",
        "-i: (none) -> x",
    ]
    assert differences(before, before) == []
    assert differences(["score", "a"], ["score", "b"]) == ["was `score a`, now `score b`"]
