"""No lost files, one trainer per run directory, consistent runs, and `error:` lines instead of tracebacks.

Each test states one rule of the README's "Safety" section and tries it on every command it covers.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import typing
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from seq2seq.checkpoint import load_checkpoint
from seq2seq.cli import app
from seq2seq.rundir import RunDir
from tests.conftest import ROOT, tiny_config_dict, train_tiny_run, write_corpus


def run_cli(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def run_process(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "seq2seq", *args], capture_output=True, cwd=ROOT, env=env, **kwargs
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): digest(p) for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """A config and its finished run directory, trained once for the module."""
    return train_tiny_run(tmp_path_factory.mktemp("safety"), max_steps=12, valid_every=6)


@pytest.fixture
def run_copy(trained, tmp_path) -> tuple[Path, Path]:
    """A private copy of the trained run (tests that damage it), with a config pointing at it."""
    config, run = trained
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    raw = yaml.safe_load(config.read_text())
    raw["run_dir"] = str(copy)
    new_config = tmp_path / "config.yaml"
    new_config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return new_config, copy


# ---- outputs never replace inputs, and are whole or absent ---------------------------------------------


def output_cases(run: Path, tmp: Path) -> list[tuple[list[str], Path]]:
    """(command, the input file it must leave untouched) for every command that takes an output path."""
    src, ref = write_corpus(tmp, "test", 6, seed=5)
    hyp = tmp / "hyp.txt"
    hyp.write_text(ref.read_text())
    link = tmp / "link.txt"
    link.symlink_to(src)
    report = tmp / "report"
    report.mkdir()
    page = report / "index.html"
    page.write_text(ref.read_text())
    best = run / "checkpoints" / "best.pt"
    evaluate = ["evaluate", str(run), "--src", str(src), "--ref", str(ref)]
    return [
        (["translate", str(run), "-i", str(src), "-o", str(src)], src),
        (["translate", str(run), "-i", str(src), "-o", str(link)], src),
        (["translate", str(run), "-i", str(src), "-o", str(run / "config.yaml")], run / "config.yaml"),
        ([*evaluate, "--out", str(ref)], ref),
        ([*evaluate, "--out", str(src)], src),
        ([*evaluate, "--json", str(ref)], ref),
        ([*evaluate, "--out", str(run / "tokenizer" / "spm.model")], run / "tokenizer" / "spm.model"),
        (["evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", str(hyp)], hyp),
        (["evaluate", "--hyp", str(hyp), "--ref", str(page), "--report", str(report)], page),
        (["average", str(run), "--last", "1", "--output", str(best.with_suffix(""))], best),
        (
            ["average", str(run), "--last", "1", "--output", str(run / "checkpoints" / "last")],
            run / "checkpoints" / "last.pt",
        ),
    ]


@pytest.mark.parametrize("case", range(11))
def test_no_command_writes_over_a_file_it_reads(run_copy, tmp_path, case):
    _, run = run_copy
    (tmp_path / "files").mkdir()
    args, victim = output_cases(run, tmp_path / "files")[case]
    before = digest(victim)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "error:" in result.output
    assert digest(victim) == before


def test_two_outputs_on_one_file_are_refused(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b c\n")
    out = tmp_path / "same.json"
    result = run_cli(
        "evaluate", "--hyp", str(ref), "--ref", str(ref), "--json", str(out), "--report", str(tmp_path)
    )
    assert result.exit_code == 0  # distinct files are fine
    result = run_cli(
        "evaluate",
        "--hyp",
        str(ref),
        "--ref",
        str(ref),
        "--json",
        str(tmp_path / "index.html"),
        "--report",
        str(tmp_path),
    )
    assert result.exit_code == 2 and "name the same file" in result.output


def test_a_failed_translation_leaves_the_old_output_untouched(trained, tmp_path):
    _, run = trained
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"red cat\n" * 3 + b"blue \xff bird\n")
    out = tmp_path / "existing.hyp"
    out.write_text("the old translations\n")
    result = run_cli("translate", str(run), "-i", str(bad), "-o", str(out))
    assert result.exit_code == 2 and "line 4 is not valid UTF-8" in result.output
    assert out.read_text() == "the old translations\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "existing.hyp"]  # no temp file left


def test_translation_to_a_file_is_written_as_it_goes_and_sigterm_keeps_the_old_file(trained, tmp_path):
    """Lines reach the (temporary) output while input is still arriving; SIGTERM discards them."""
    _, run = trained
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "translate", str(run), "-o", str(out), "--beam", "1"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        proc.stdin.write(b"red cat\nblue bird\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        partial: list[Path] = []
        while time.monotonic() < deadline:
            partial = [p for p in tmp_path.glob(".out.txt.*.tmp") if p.stat().st_size > 0]
            if partial:
                break
            time.sleep(0.1)
        assert partial, "no translated line was written before the input ended"
        assert partial[0].read_text().count("\n") == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()  # only if a check above failed: never leave a process behind
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_translation_replaces_the_output_whole_and_keeps_its_permissions(trained, tmp_path):
    _, run = trained
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(0o640)
    result = run_cli("translate", str(run), "-o", str(out), input="red cat\n\nblue bird\n")
    assert result.exit_code == 0, result.output
    assert out.read_text().count("\n") == 3
    assert out.stat().st_mode & 0o777 == 0o640


def test_an_output_symlink_keeps_pointing_at_its_file_and_a_fifo_is_written_directly(trained, tmp_path):
    _, run = trained
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target)
    assert run_cli("translate", str(run), "-o", str(link), input="red cat\n").exit_code == 0
    assert link.is_symlink() and target.read_text() != "old\n" and target.read_text().count("\n") == 1
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # never blocks, even if s2s fails
    try:
        assert run_cli("translate", str(run), "-o", str(fifo), input="red cat\nblue bird\n").exit_code == 0
        assert os.read(reader, 1 << 16).count(b"\n") == 2
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# ---- one owner per run directory ----------------------------------------------------------------------


@pytest.mark.parametrize("flags", [["--resume"], ["--overwrite"], [], ["--tokenizer-only"]])
def test_a_run_directory_held_by_a_trainer_is_refused(run_copy, flags):
    config, run = run_copy
    before = tree_digest(run)
    with RunDir(run).locked():
        result = run_cli("train", str(config), *flags)
        assert result.exit_code == 2, result.output
        assert f"in use by another s2s train (pid {os.getpid()})" in result.output
    after = {k: v for k, v in tree_digest(run).items() if k != ".s2s-run"}
    assert after == {k: v for k, v in before.items() if k != ".s2s-run"}


def test_the_lock_dies_with_its_process(run_copy):
    _, run = run_copy
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time; from seq2seq.rundir import RunDir\nwith RunDir({str(run)!r}).locked():\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert holder.stdout.readline() == b"held\n"
    with pytest.raises(Exception, match=f"pid {holder.pid}"), RunDir(run).locked():
        pass
    holder.kill()  # kill -9: no cleanup code runs
    holder.wait()
    with RunDir(run).locked():
        pass


def test_overwrite_refuses_to_delete_data_inside_the_run_directory(run_copy):
    config, run = run_copy
    raw = yaml.safe_load(config.read_text())
    inside = run / "corpus.src"
    shutil.copy(raw["data"]["train_src"], inside)
    raw["data"]["train_src"] = str(inside)
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 2 and "would delete data.train_src" in result.output
    assert inside.is_file() and (run / "checkpoints" / "last.pt").is_file()


def test_overwrite_through_a_symlinked_run_directory(run_copy, tmp_path):
    config, run = run_copy
    link = tmp_path / "link"
    link.symlink_to(run)
    raw = yaml.safe_load(config.read_text())
    raw["run_dir"] = str(link)
    config.write_text(yaml.safe_dump(raw | {"train": raw["train"] | {"max_steps": 2, "valid_every": 2}}))
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and (run / "checkpoints" / "step_2.pt").is_file()
    assert not (run / "checkpoints" / "step_12.pt").exists()


# ---- a run directory is consistent or refused ---------------------------------------------------------


@pytest.fixture(scope="module")
def other_tokenizer(tmp_path_factory) -> Path:
    """A valid s2s tokenizer of the same size, trained with other settings."""
    tmp = tmp_path_factory.mktemp("other")
    raw = tiny_config_dict(tmp)
    raw["tokenizer"]["split_digits"] = True
    config = tmp / "other.yaml"
    config.write_text(yaml.safe_dump(raw))
    assert run_cli("train", str(config), "--tokenizer-only").exit_code == 0
    return Path(raw["run_dir"]) / "tokenizer" / "spm.model"


def damage_tokenizer(run: Path, how: str, replacement: Path) -> None:
    model = run / "tokenizer" / "spm.model"
    if how == "deleted":
        shutil.rmtree(run / "tokenizer")
    elif how == "corrupted":
        model.write_bytes(b"\x00garbage" * 100)
    else:
        assert digest(replacement) != digest(model)
        shutil.copy(replacement, model)


@pytest.mark.parametrize("how", ["deleted", "corrupted", "replaced"])
@pytest.mark.parametrize("command", ["translate", "evaluate", "resume"])
def test_a_damaged_tokenizer_is_refused_never_retrained(run_copy, other_tokenizer, tmp_path, how, command):
    config, run = run_copy
    damage_tokenizer(run, how, other_tokenizer)
    src, ref = write_corpus(tmp_path, "t", 3, seed=3)
    args = {
        "translate": ["translate", str(run), "-i", str(src)],
        "evaluate": [
            "evaluate",
            str(run),
            "--src",
            str(src),
            "--ref",
            str(ref),
            "--out",
            str(tmp_path / "h"),
        ],
        "resume": ["train", str(config), "--resume", "--set", "train.max_steps=14"],
    }[command]
    before = tree_digest(run)
    result = run_cli(*args)
    assert result.exit_code == 2, result.output
    assert "spm.model" in result.output or "tokenizer" in result.output
    assert tree_digest(run) == before  # nothing trained, nothing saved


def test_a_checkpoint_of_another_run_is_refused_with_the_differences(run_copy, tmp_path):
    _, run = run_copy
    state = load_checkpoint(run / "checkpoints" / "last.pt")
    state["config"]["model"]["heads"] = 4  # same tensor shapes, another model
    state["tokenizer_sha256"] = {"spm.model": "0" * 64}
    foreign = tmp_path / "foreign.pt"
    torch.save(state, foreign)
    result = run_cli("translate", str(run), "--checkpoint", str(foreign), input="red cat\n")
    assert result.exit_code == 2
    assert "model.heads: checkpoint 4, run 2" in result.output
    assert "tokenizer/spm.model" in result.output


def test_resume_refuses_an_edited_corpus(run_copy):
    config, run = run_copy
    raw = yaml.safe_load(config.read_text())
    train_src = Path(raw["data"]["train_src"])
    original = train_src.read_bytes()
    try:
        train_src.write_bytes(original.replace(b"red", b"pink"))
        result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=14")
        assert result.exit_code == 2 and "train_src: changed" in result.output
    finally:
        train_src.write_bytes(original)
    result = run_cli("train", str(config), "--resume", "--set", "train.max_steps=14")
    assert result.exit_code == 0, result.output


# ---- everything is validated before anything is touched -----------------------------------------------


FLOAT_KEYS = [
    ("data", "max_len_ratio"),
    ("tokenizer", "character_coverage"),
    ("model", "dropout"),
    ("model", "attention_dropout"),
    ("model", "activation_dropout"),
    ("train", "lr"),
    ("train", "min_lr"),
    ("train", "weight_decay"),
    ("train", "clip_norm"),
    ("train", "label_smoothing"),
    ("train", "max_minutes"),
    ("train", "ema_decay"),
    ("decode", "length_penalty"),
    ("decode", "max_len_a"),
]


def test_every_float_setting_is_listed_here():
    from seq2seq.config import Config

    sections = {name: kind for name, kind in typing.get_type_hints(Config).items() if name != "run_dir"}
    found = {
        (name, key)
        for name, kind in sections.items()
        for key, key_kind in typing.get_type_hints(kind).items()
        if key_kind is float
    }
    assert found == set(FLOAT_KEYS)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "nan"])
@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_non_finite_numbers_are_refused_at_load(tmp_path, key, value):
    from seq2seq.config import load_config
    from seq2seq.errors import ConfigError

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)))
    with pytest.raises(ConfigError, match=f"{key[0]}.{key[1]}: must be a finite number"):
        load_config(config, [f"{key[0]}.{key[1]}={value}"])


@pytest.mark.parametrize(
    "override",
    [
        "tokenizer.character_coverage=0.5",  # SentencePiece refuses it, after the run was deleted
        "train.weight_decay=-1",  # AdamW refuses it
        "train.seed=-1",
        "train.lr=.nan",
        "tokenizer.vocab_size=99999999999",
        "train.num_threads=100000",
    ],
)
def test_values_the_libraries_refuse_fail_before_overwrite_deletes_anything(run_copy, override):
    config, run = run_copy
    before = tree_digest(run)
    result = run_cli("train", str(config), "--overwrite", "--set", override)
    assert result.exit_code == 2, result.output
    assert override.split("=")[0] in result.output
    assert tree_digest(run) == before


def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path):
    config = tmp_path / "c.yaml"
    text = yaml.safe_dump(tiny_config_dict(tmp_path)).replace("run_dir:", "# Übersetzung\nrun_dir:")
    config.write_bytes(text.encode("latin-1"))
    result = run_process("train", str(config))
    assert result.returncode == 2
    assert f"{config}: line ".encode() in result.stderr and b"is not valid UTF-8" in result.stderr
    assert b"Traceback" not in result.stderr


def test_a_diverging_run_stops_without_saving(tmp_path, monkeypatch):
    """A non-finite loss stops training with exit 2; no checkpoint or metric holds the diverged state."""
    from seq2seq.training.loss import TrainingLoss

    real_loss, calls = TrainingLoss.forward, []

    def loss_that_explodes(*args, **kwargs):
        calls.append(1)
        loss = real_loss(*args, **kwargs)
        return loss * float("nan") if len(calls) > 8 else loss

    monkeypatch.setattr(TrainingLoss, "forward", loss_that_explodes)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path, max_steps=12, valid_every=6, log_every=4)))
    result = run_cli("train", str(config))
    assert result.exit_code == 2, result.output
    assert "training diverged" in result.output and "train.lr" in result.output
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.pt", "last.pt", "step_6.pt"]
    assert "nan" not in (run / "metrics.jsonl").read_text().lower()


# ---- text is checked, not guessed ---------------------------------------------------------------------


def test_nul_bytes_are_an_error_naming_file_and_line(trained, tmp_path):
    _, run = trained
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("red cat\nblue bird\n".encode("utf-16-le"))
    for args in (
        ["translate", str(run), "-i", str(utf16)],
        ["evaluate", "--hyp", str(utf16), "--ref", str(utf16)],
    ):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert f"{utf16}: line 1 contains a NUL byte" in result.output
    result = run_cli("translate", str(run), input=b"red cat\nblue\x00 bird\n")
    assert result.exit_code == 2 and "stdin: line 2 contains a NUL byte" in result.output


def test_a_corpus_in_utf16_is_refused_before_training(tmp_path):
    raw = tiny_config_dict(tmp_path)
    path = Path(raw["data"]["train_tgt"])
    path.write_bytes(path.read_text().encode("utf-16-le"))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and "NUL byte" in result.output
    assert not (tmp_path / "run").exists()


def test_a_utf8_bom_is_not_part_of_the_first_line(trained, tmp_path):
    _, run = trained
    ref = tmp_path / "ref.txt"
    ref.write_text("red cat on the house\nblue bird\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"\xef\xbb\xbf" + ref.read_bytes())
    result = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", str(tmp_path / "s.json"))
    assert result.exit_code == 0, result.output
    assert '"score": 100.0' in (tmp_path / "s.json").read_text()
    plain = run_cli("translate", str(run), input="red cat\n").stdout
    with_bom = run_cli("translate", str(run), input="\ufeffred cat\n".encode()).stdout
    assert with_bom == plain


# ---- every error is an `error:` line, and pipes behave like Unix tools --------------------------------


def test_a_closed_pipe_ends_quietly(trained):
    _, run = trained
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written (`| head -0`)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", str(run)],
            input=b"red cat\n" * 50,
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 141
    assert result.stderr == b""


@pytest.mark.parametrize(
    "closed, extra, message",
    [("0<&-", [], b"stdin is closed"), ("1>&-", ["-i", "/dev/null"], b"stdout is closed")],
)
def test_closed_standard_streams_are_clear_errors(trained, closed, extra, message):
    _, run = trained
    command = f"{sys.executable} -m seq2seq translate {run} {' '.join(extra)} {closed}"
    result = subprocess.run(["bash", "-c", command], capture_output=True, cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and b"Traceback" not in result.stderr


def test_stdout_redirected_onto_the_input_is_refused(trained, tmp_path):
    _, run = trained
    src = tmp_path / "src.txt"
    src.write_text("red cat\n")
    with src.open("ab") as appended:  # `s2s translate RUN -i src.txt >> src.txt`
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", str(run), "-i", str(src)],
            stdout=appended,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,  # reading its own output would never end
        )
    assert result.returncode == 2 and b"stdout is the input file" in result.stderr
    assert src.read_text() == "red cat\n"


def test_unwritable_checkpoints_fail_before_training(run_copy, tmp_path):
    config, run = run_copy
    shutil.rmtree(run / "checkpoints")
    (run / "metrics.jsonl").unlink()
    (run / "checkpoints").write_text("not a directory")
    result = run_cli("train", str(config))
    assert result.exit_code == 2 and f"cannot write checkpoints to {run / 'checkpoints'}" in result.output
    assert not (run / "metrics.jsonl").exists()


def test_plot_texts_are_shown_literally():
    """Sentences and file names with `$` reach a report's figures as written, never as math."""
    pytest.importorskip("matplotlib")
    from seq2seq.evaluation.report import AttentionMap, attention_figure, image

    pieces = ["▁$\\frac{$", "$x^2$", "</s>"]
    figure = attention_figure(AttentionMap(pieces, pieces, torch.full((3, 3), 1 / 3)))
    assert image(figure, "x").startswith("<img")  # unbalanced math would raise here
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == pieces
