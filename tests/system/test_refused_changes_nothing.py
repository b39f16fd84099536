"""A refused command changes nothing, and a failed one leaves nothing that blocks its corrected rerun.

`s2s train` and `s2s prepare` check what they can (the config, the data: readable, UTF-8 to the end,
not empty) before their first write; what can only fail later (the tokenizer refusing the text, every
pair filtered out, Ctrl-C, a crash before the new run's first checkpoint) is undone, so the old run is
byte-identical afterwards, its marker included. The commands the errors advise work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seq2seq.data.prepared import load_prepared_part
from seq2seq.errors import DataError
from seq2seq.training import setup
from tests.conftest import ROOT, tiny_config_dict
from tests.helpers import cli_translate, run_cli, run_process, tree_digest

QUICK = ["--set", "train.max_steps=2", "--set", "train.valid_every=2"]  # a corrected rerun, in seconds


def write_bad_corpus(directory: Path, kind: str, good_src: Path, good_tgt: Path) -> list[str]:
    """`--set` overrides pointing the training data at a corpus that is `kind`."""
    src, tgt = directory / f"{kind}.src", directory / f"{kind}.tgt"
    if kind == "unreadable":  # even root cannot read it (an I/O error)
        return set_data(Path(f"/proc/{os.getpid()}/mem"), good_tgt)
    good = good_src.read_bytes(), good_tgt.read_bytes()
    tails = {"empty": None, "blank": None, "not_utf8": b"caf\xe9\n", "nul": b"a\0b\n"}
    for path, text in zip((src, tgt), good, strict=True):
        if kind == "empty":
            path.write_bytes(b"")
        elif kind == "blank":
            path.write_bytes(b"\n \n\t\n" * 100)
        else:  # a good corpus, spoiled on its last line (the tokenizer reads it only after line 400)
            path.write_bytes(text + tails[kind])
    return set_data(src, tgt)


def set_data(src: Path, tgt: Path) -> list[str]:
    return ["--set", f"data.train_src={src}", "--set", f"data.train_tgt={tgt}"]


CORPORA = ["empty", "blank", "not_utf8", "nul", "unreadable"]
SETTINGS = {  # values only training finds wrong, or the config's rules refuse
    "tokenizer_cannot_train": ["--set", "tokenizer.vocab_size=9"],  # fewer pieces than characters
    "all_pairs_filtered": ["--set", "data.max_len=1"],
    "bad_value": ["--set", "train.weight_decay=-1"],
}


def refusal(kind: str, tmp_path: Path, data: Path) -> list[str]:
    if kind in SETTINGS:
        return SETTINGS[kind]
    return write_bad_corpus(tmp_path, kind, data / "train.src", data / "train.tgt")


@pytest.mark.slow
@pytest.mark.parametrize("kind", [*CORPORA, *SETTINGS])
def test_a_refused_overwrite_changes_nothing_and_its_corrected_rerun_succeeds(run_copy, tmp_path, kind):
    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    result = run_cli("train", str(config), "--overwrite", *QUICK, *refusal(kind, tmp_path, run_copy.data))
    assert result.exit_code == 2 and "error:" in result.output, result.output
    assert tree_digest(run) == before
    if kind in CORPORA:  # found before the first write, not by the tokenizer after it
        assert "tokenizer" not in result.output
    result = run_cli("train", str(config), "--overwrite", *QUICK)
    assert result.exit_code == 0, result.output
    assert (run / "checkpoints" / "step_2.pt").is_file() and not (run / "checkpoints" / "step_12.pt").exists()
    assert not (run / ".s2s-previous").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["empty", "not_utf8", "tokenizer_cannot_train", "all_pairs_filtered"])
@pytest.mark.parametrize("command", [["prepare"], ["train", *QUICK]])
def test_a_refused_new_run_leaves_nothing_and_its_corrected_rerun_succeeds(tmp_path, command, kind):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    result = run_cli(command[0], str(config), *command[1:], *refusal(kind, tmp_path, tmp_path / "data"))
    assert result.exit_code == 2 and "error:" in result.output, result.output
    assert not (tmp_path / "run").exists()  # no config.yaml to trip the corrected command
    result = run_cli(*command[:1], str(config), *command[1:])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_a_refused_train_leaves_the_marker_as_it_was(run_copy):
    """`s2s train` writes its pid into .s2s-run while it holds the run; a process refused after taking
    the lock (the run has started: neither --resume nor --overwrite) leaves the old content."""
    before = tree_digest(run_copy.run)
    result = run_process("train", str(run_copy.config))
    assert result.returncode == 2 and b"already holds a training run" in result.stderr
    assert tree_digest(run_copy.run) == before


def fail_at(monkeypatch: pytest.MonkeyPatch, step: str, error: BaseException) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(setup, step, failing)


LATE = {  # each step of the set-up after the claim's first write, and how it may fail
    "_make_tokenizers": DataError("the tokenizer refused"),
    "_prepare_corpus": KeyboardInterrupt(),  # Ctrl-C, or SIGTERM (the CLI raises the same)
    "_load_inputs": DataError("a validation line the tokenizer splits otherwise"),  # training only
}
COMMANDS = {
    "train --overwrite": ["train", "--overwrite", *QUICK],
    "train --resume": ["train", "--resume", "--set", "train.max_steps=14"],  # rewrites config.yaml
    "prepare --overwrite": ["prepare", "--overwrite"],
    "prepare": ["prepare"],  # on a started run: the set-up of a resumed run
}
CASES = [(c, s) for c in COMMANDS for s in LATE if c.startswith("train") or s != "_load_inputs"]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "step"), CASES, ids=[f"{c}-{s}" for c, s in CASES])
def test_a_failure_later_in_the_setup_puts_the_run_back(run_copy, monkeypatch, command, step):
    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    fail_at(monkeypatch, step, LATE[step])
    verb, *flags = COMMANDS[command]
    result = run_cli(verb, str(config), *flags)
    assert result.exit_code in (2, 130), result.output
    assert tree_digest(run) == before


@pytest.mark.slow
def test_a_refused_run_over_a_tokenizer_stage_leaves_the_stage(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    assert run_cli("train", str(config), "--tokenizer-only").exit_code == 0
    run = tmp_path / "run"
    before = tree_digest(run)
    fail_at(monkeypatch, "_prepare_corpus", DataError("refused late"))
    result = run_cli("train", str(config), "--set", "train.lr=1e-3")  # its config.yaml differs
    assert result.exit_code == 2, result.output
    assert tree_digest(run) == before
    monkeypatch.undo()
    assert run_cli("train", str(config), *QUICK).exit_code == 0


@pytest.mark.slow
def test_training_that_fails_before_the_first_checkpoint_puts_the_old_run_back(run_copy, monkeypatch):
    from seq2seq.training.trainer import Trainer

    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    real_step, steps = Trainer.train_step, []

    def out_of_memory_at_step_3(self: Trainer, *args: object, **kwargs: object) -> object:
        steps.append(1)
        if len(steps) == 3:
            raise RuntimeError("CUDA out of memory")
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "train_step", out_of_memory_at_step_3)
    result = run_cli("train", str(config), "--overwrite", "--set", "train.valid_every=4")
    assert isinstance(result.exception, RuntimeError) and len(steps) == 3
    assert tree_digest(run) == before  # metrics and log of the two steps gone, the old run back
    steps.clear()  # after a first checkpoint (step 2) the new run stays
    result = run_cli("train", str(config), "--overwrite", *QUICK, "--set", "train.max_steps=4")
    assert isinstance(result.exception, RuntimeError)
    assert (run / "checkpoints" / "step_2.pt").is_file() and not (run / ".s2s-previous").exists()


KILLED_OVERWRITE = """
import os, sys
from pathlib import Path
from seq2seq.training.distributed import DistInfo
from seq2seq.training.request import train_request
from seq2seq.training.training_plan import plan_training
from seq2seq.training.setup import claim

plan, _, _ = plan_training(train_request(Path(sys.argv[1]), [], "cpu", "overwrite"), DistInfo())
with claim(plan, DistInfo()):
    os._exit(9)  # as kill -9 would: the old run set aside, the new config written, nothing undone
"""


@pytest.mark.slow
def test_an_overwrite_killed_before_its_first_checkpoint_is_explained_and_undone(run_copy):
    config, run = run_copy.config, run_copy.run
    lines = ["red cat", "blue bird"]
    translations = cli_translate(run, lines)
    before = tree_digest(run)
    killed = subprocess.run([sys.executable, "-c", KILLED_OVERWRITE, str(config)], cwd=ROOT)
    assert killed.returncode == 9 and (run / ".s2s-previous" / "journal.json").is_file()
    result = run_cli("translate", str(run), input="red cat\n")
    assert result.exit_code == 2 and "is being replaced" in result.output
    advice = "the next `s2s train` or `s2s prepare` of this run directory puts the previous run back"
    assert advice in result.output
    result = run_cli("train", str(config))  # the advice; then refused: the run is back, and has started
    assert "the previous run it had set aside is back" in result.output
    assert result.exit_code == 2 and "already holds a training run" in result.output
    after = tree_digest(run)
    assert after.pop(".s2s-run") != before.pop(".s2s-run")  # the killed process's pid stays there
    assert after == before
    assert cli_translate(run, lines) == translations


@pytest.mark.slow
def test_a_stage_that_no_longer_matches_is_replaced_by_prepare_overwrite(tmp_path):
    """The advice of `s2s prepare` on a run made with other settings works for `s2s prepare` too."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    assert run_cli("prepare", str(config)).exit_code == 0
    result = run_cli("prepare", str(config), "--set", "tokenizer.vocab_size=70")
    assert result.exit_code == 2 and "start a new run with --overwrite" in result.output
    result = run_cli("prepare", str(config), "--set", "tokenizer.vocab_size=70", "--overwrite")
    assert result.exit_code == 0, result.output
    result = run_cli("train", str(config), "--set", "tokenizer.vocab_size=70", *QUICK)
    assert result.exit_code == 0 and "reusing prepared corpus train" in result.output, result.output


def edit_manifest(directory: Path, change: str) -> None:
    import json

    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    if change == "pairs":
        manifest["pairs"] += 1
    else:  # another dtype of the same size on disk: the checksums still match
        manifest["arrays"]["src.offsets"]["dtype"] = "<i4"
    path.write_text(json.dumps(manifest))


@pytest.mark.slow
@pytest.mark.parametrize("change", ["pairs", "offsets_dtype"])
def test_an_inconsistent_prepared_corpus_is_made_again_by_the_advised_command(tmp_path, change):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_config_dict(tmp_path)), encoding="utf-8")
    assert run_cli("prepare", str(config)).exit_code == 0
    prepared = tmp_path / "run" / "prepared" / "train"
    good = load_prepared_part(prepared)
    edit_manifest(prepared, change)
    with pytest.raises(DataError, match=r"is unusable \(.*\): run `s2s prepare CONFIG` again"):
        load_prepared_part(prepared)
    result = run_cli("prepare", str(config))  # the advice
    assert result.exit_code == 0, result.output
    remade = load_prepared_part(prepared)
    for side in ("src", "tgt"):
        was, now = getattr(good, side), getattr(remade, side)
        assert was.ids.tolist() == now.ids.tolist() and was.offsets.tolist() == now.offsets.tolist()


@pytest.mark.slow
def test_a_refused_overwrite_under_torchrun_changes_nothing(run_copy):
    """Rank 0 alone touches the run; its late failure (the tokenizer refusing the text) reaches rank 1
    through `shared_failure`, both stop with an error line, and the old run is back."""
    config, run = run_copy.config, run_copy.run
    before = tree_digest(run)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    proc = subprocess.run(
        [*torchrun, "-m", "seq2seq", "train", str(config), "--overwrite", "--device", "cpu"]
        + SETTINGS["tokenizer_cannot_train"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode != 0 and "Vocabulary size is smaller" in proc.stderr, proc.stderr[-3000:]
    assert "error: rank 0 could not prepare the run directory" in proc.stderr  # rank 1 stopped too
    assert tree_digest(run) == before
