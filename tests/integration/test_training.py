import errno
import gzip
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.checkpoint import atomic_save, inference_weights, load_checkpoint
from seq2seq.config import config_from_dict
from seq2seq.data.parallel import ParallelData
from seq2seq.data.tokenizer import train_or_load_tokenizers
from seq2seq.errors import ConfigError, RunDirError, TrainingDiverged
from seq2seq.files import OutputError
from seq2seq.models.build import build_model
from seq2seq.run.layout import RunDir
from seq2seq.training.distributed import DistInfo
from seq2seq.training.request import train_request
from seq2seq.training.setup import claim, make_inputs
from seq2seq.training.trainer import Trainer
from seq2seq.training.training_plan import plan_training
from seq2seq.training.training_run import train
from seq2seq.training.validation import ValidSet
from tests.conftest import ROOT, tiny_config_dict, write_corpus
from tests.helpers import count_checksums, run_cli

pytestmark = pytest.mark.slow

CPU = torch.device("cpu")


def write_config(tmp_path: Path, name: str, **train: object) -> Path:
    raw = tiny_config_dict(tmp_path, **train)
    raw["run_dir"] = str(tmp_path / name)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def train_losses(run_dir: Path) -> dict[int, tuple[float, float]]:
    """Per logged step: (loss, learning rate), so a resumed run must match in both."""
    return {
        r["step"]: (r["train_loss"], r["lr"]) for r in RunDir(run_dir).read_metrics() if r["kind"] == "train"
    }


def invoke(*args: str):
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    return result


def test_tiny_model_overfits_a_tiny_batch(tmp_path):
    cfg = config_from_dict(tiny_config_dict(tmp_path, lr=1e-2, warmup_steps=1, label_smoothing=0.0))
    toks = train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    data = ParallelData.from_lists(
        toks.src.encode(["red cat runs", "the big dog"]), toks.tgt.encode(["RUNS CAT RED", "DOG BIG"])
    )
    batch = data.batch([0, 1])
    trainer = Trainer(
        cfg, RunDir(tmp_path / "run"), model, toks, {}, data, [ValidSet(data, [], [])], DistInfo(), CPU
    )
    losses = [float(trainer.train_step([batch])[0]) / batch.num_tgt_tokens for _ in range(150)]
    assert losses[-1] < 0.05 * losses[0]


def test_checkpoints_record_the_tokenizer_checksums_the_trainer_is_given(tmp_path):
    cfg = config_from_dict(tiny_config_dict(tmp_path, max_steps=1, valid_every=1, valid_bleu=False))
    toks = train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    data = ParallelData.from_lists(toks.src.encode(["red cat"]), toks.tgt.encode(["CAT RED"]))
    (tmp_path / "run").mkdir()
    sums = {"spm.model": "0" * 64}  # the run's inputs.json is never read: the setup path hands them over
    trainer = Trainer(
        cfg, RunDir(tmp_path / "run"), model, toks, sums, data, [ValidSet(data, [], [])], DistInfo(), CPU
    )
    trainer.fit()
    assert load_checkpoint(RunDir(tmp_path / "run").checkpoint_path("last"))["tokenizer_sha256"] == sums


def test_resumed_run_logs_the_same_losses_as_an_uninterrupted_one(tmp_path):
    whole = write_config(tmp_path, "whole")
    invoke("train", str(whole))
    parts = write_config(tmp_path, "parts")
    invoke("train", str(parts), "--set", "train.max_steps=5")
    invoke("train", str(parts), "--resume")
    expected, got = train_losses(tmp_path / "whole"), train_losses(tmp_path / "parts")
    assert sorted(expected) == list(range(1, 13))
    assert got == expected


def mixed_corpora(tmp_path: Path, name: str, **train: object) -> Path:
    """The tiny config on three corpora: the tiny one (weight 0.5, some pairs modified), its first 60
    pairs as a gzip TSV tagged <bt> (weight 2, modified otherwise), and a small one of its own."""
    path = write_config(tmp_path, name, **train)
    raw = yaml.safe_load(path.read_text())
    data = raw["data"]
    src, tgt = Path(data.pop("train_src")), Path(data.pop("train_tgt"))
    pairs = list(zip(src.read_text().splitlines(), tgt.read_text().splitlines(), strict=True))[:60]
    (tmp_path / "bt.tsv.gz").write_bytes(gzip.compress("".join(f"{s}\t{t}\n" for s, t in pairs).encode()))
    small_src, small_tgt = write_corpus(tmp_path, "small", 30, seed=9)
    data["corpora"] = [
        {
            "name": "tiny",
            "src": str(src),
            "tgt": str(tgt),
            "weight": 0.5,
            "augment": {"upper": 0.2, "typos": 0.3},
        },
        {"name": "bt", "tsv": str(tmp_path / "bt.tsv.gz"), "weight": 2, "tag": "<bt>", "augment": AUGMENT_BT},
        {"name": "small", "src": str(small_src), "tgt": str(small_tgt)},
    ]
    raw["tokenizer"]["control_tokens"] = ["<bt>"]
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


AUGMENT_BT = {"title": 0.3, "nopunct": 0.2, "noise": 0.1}


def test_resume_across_an_epoch_boundary_with_accumulation_weighted_and_augmented_corpora(tmp_path):
    whole = mixed_corpora(tmp_path, "whole", accum_steps=2, max_steps=14, max_tokens=512)
    invoke("train", str(whole))
    parts = mixed_corpora(tmp_path, "parts", accum_steps=2, max_steps=14, max_tokens=512)
    invoke("train", str(parts), "--set", "train.max_steps=9")
    invoke("train", str(parts), "--resume")
    assert train_losses(tmp_path / "parts") == train_losses(tmp_path / "whole")
    epochs = {r["epoch"] for r in RunDir(tmp_path / "whole").read_metrics()}
    assert len(epochs) > 1  # the comparison really crossed an epoch
    log = (tmp_path / "whole" / "train.log").read_text(encoding="utf-8")
    assert re.search(r"epoch 1: [1-9]\d* of \d+ examples modified", log)  # what was resumed was modified


def test_validation_scores_a_modified_copy_beside_the_set_and_chooses_by_their_mean(tmp_path):
    config = write_config(tmp_path, "run", max_steps=4, valid_every=2, valid_augment={"upper": 0.5})
    invoke("train", str(config))
    records = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    assert len(records) == 2
    for r in records:
        mean = (r["valid_bleu.given"] + r["valid_bleu.augmented"]) / 2
        assert r["valid_bleu"] == pytest.approx(mean, abs=0.01)
        assert r["valid_loss.augmented"] != r["valid_loss.given"]  # the copy is another set
    log = (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    assert re.search(r"BLEU [\d.]+ \(mean\); given BLEU [\d.]+, augmented BLEU", log)


def test_ctrl_c_saves_and_resume_continues_exactly(tmp_path):
    reference = write_config(tmp_path, "reference", max_steps=40, valid_every=1000, valid_bleu=False)
    invoke("train", str(reference))
    config = write_config(tmp_path, "interrupted", max_steps=40, valid_every=1000, valid_bleu=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "seq2seq", "train", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    metrics = tmp_path / "interrupted" / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    state = load_checkpoint(tmp_path / "interrupted" / "checkpoints" / "last.pt")
    stopped_at = state["progress"]["step"]
    assert 3 <= stopped_at < 40
    invoke("train", str(config), "--resume")
    assert train_losses(tmp_path / "interrupted") == train_losses(tmp_path / "reference")


def test_a_run_at_fixed_shapes_trains_and_resumes_exactly(tmp_path):
    """train.shape_multiple: the order of padded batches is a function of the seed like any other."""
    settings = {"valid_every": 1000, "valid_bleu": False, "log_every": 1, "shape_multiple": 8}
    invoke("train", str(write_config(tmp_path, "reference", max_steps=6, **settings)))
    invoke("train", str(write_config(tmp_path, "resumed", max_steps=3, **settings)))
    invoke("train", str(write_config(tmp_path, "resumed", max_steps=6, **settings)), "--resume")
    assert train_losses(tmp_path / "resumed") == train_losses(tmp_path / "reference")
    assert len(train_losses(tmp_path / "reference")) == 6
    log = (tmp_path / "reference" / "train.log").read_text(encoding="utf-8")
    assert "lengths in multiples of 8" in log


def test_checkpoint_holds_everything_needed_to_resume(tmp_path):
    config = write_config(tmp_path, "run", max_steps=3, valid_every=3)
    invoke("train", str(config))
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert {"model", "optimizer", "scheduler", "scaler", "progress", "rng", "config"} <= set(state)
    assert state["progress"]["step"] == 3


def test_keeps_only_the_last_k_numbered_checkpoints(tmp_path):
    config = write_config(tmp_path, "run", max_steps=12, valid_every=2, keep_checkpoints=2)
    invoke("train", str(config))
    names = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("*.pt"))
    assert names == ["best.pt", "last.pt", "step_10.pt", "step_12.pt"]


def test_numbered_checkpoints_are_weights_only_unless_asked(tmp_path):
    config = write_config(tmp_path, "lean", max_steps=4, valid_every=2)
    invoke("train", str(config))
    checkpoints = tmp_path / "lean" / "checkpoints"
    step, last = load_checkpoint(checkpoints / "step_4.pt"), load_checkpoint(checkpoints / "last.pt")
    assert "optimizer" not in step and "optimizer" in last
    assert torch.equal(step["model"]["decoder.0.ffn.up.weight"], last["model"]["decoder.0.ffn.up.weight"])
    assert (checkpoints / "step_4.pt").stat().st_size < 0.5 * (checkpoints / "last.pt").stat().st_size
    config = write_config(tmp_path, "full", max_steps=4, valid_every=2, keep_optimizer="all")
    invoke("train", str(config))
    checkpoints = tmp_path / "full" / "checkpoints"
    assert "optimizer" in load_checkpoint(checkpoints / "step_2.pt")
    assert (checkpoints / "step_4.pt").samefile(checkpoints / "last.pt")


def test_average_works_with_the_default_settings(tmp_path):
    raw = tiny_config_dict(tmp_path, max_steps=12, valid_every=2)
    del raw["train"]["num_threads"]
    config = tmp_path / "defaults.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    invoke("train", str(config))
    invoke("average", str(tmp_path / "run"))
    averaged = load_checkpoint(tmp_path / "run" / "checkpoints" / "averaged.pt")
    assert averaged["averaged_from"] == [f"step_{s}.pt" for s in (4, 6, 8, 10, 12)]


def test_validation_bleu_uses_the_configured_tokenizer(tmp_path):
    config = write_config(tmp_path, "run", max_steps=2, valid_every=2, valid_bleu_tokenize="char")
    invoke("train", str(config))
    (record,) = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    assert "tok:char" in record["bleu_signature"]
    with pytest.raises(ConfigError, match="train.valid_bleu_tokenize: 'chars' is not one of"):
        config_from_dict(tiny_config_dict(tmp_path, valid_bleu_tokenize="chars"))


@pytest.mark.parametrize(
    "failure",
    [OSError(errno.ENOSPC, "No space left on device"), RuntimeError("[enforce fail] file write failed")],
)
def test_failed_write_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch, failure):
    """A full disk (torch.save raises RuntimeError or OSError) is a clear error naming the checkpoint."""
    path = tmp_path / "last.pt"
    atomic_save({"step": torch.tensor(1)}, path)

    def crash(obj, f, *args, **kwargs):
        f.write(b"half a checkpoint")
        raise failure

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OutputError, match=f"cannot write {re.escape(str(path))}: "):
        atomic_save({"step": torch.tensor(2)}, path)
    monkeypatch.undo()
    assert int(load_checkpoint(path)["step"]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]


def test_checkpoints_cannot_run_code(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pt"
    torch.save({"model": Evil()}, path)
    with pytest.raises(RunDirError, match="cannot load checkpoint"):
        load_checkpoint(path)


def test_metrics_have_the_documented_fields(tmp_path):
    config = write_config(tmp_path, "run", max_steps=6, valid_every=3)
    invoke("train", str(config))
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    train = next(r for r in records if r["kind"] == "train")
    valid = next(r for r in records if r["kind"] == "valid")
    assert {"step", "epoch", "train_loss", "lr", "tgt_tokens_per_s", "elapsed_s", "padding"} <= set(train)
    assert {"step", "epoch", "valid_loss", "valid_ppl", "valid_bleu", "bleu_signature"} <= set(valid)
    assert "tok:13a" in valid["bleu_signature"]


def test_validation_loss_falls(tmp_path):
    config = write_config(tmp_path, "run", max_steps=80, valid_every=4, valid_bleu=False)
    invoke("train", str(config))
    losses = [r["valid_loss"] for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    assert losses[-1] < 0.6 * losses[0]


def test_patience_stops_early(tmp_path):
    config = write_config(
        tmp_path,
        "run",
        max_steps=200,
        valid_every=1,
        patience=2,
        lr=1e-9,
        warmup_steps=0,
        schedule="constant",
    )
    invoke("train", str(config))
    valid = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    assert len(valid) < 50


@pytest.mark.parametrize("best_metric", ["loss", "bleu"])
def test_raw_and_averaged_weights_are_both_validated_and_the_better_one_is_used(tmp_path, best_metric):
    config = write_config(
        tmp_path, "run", max_steps=12, valid_every=4, ema_decay=0.9, best_metric=best_metric
    )
    invoke("train", str(config))
    validations = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    key = "valid_loss" if best_metric == "loss" else "valid_bleu"
    better = min if best_metric == "loss" else max
    for record in validations:
        assert record[key] == better(record[f"raw_{key}"], record[f"ema_{key}"])
        assert record[key] == record[f"{record['weights']}_{key}"]
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    chosen = {"raw": "model", "ema": "ema"}[validations[-1]["weights"]]
    assert state["inference"] == chosen and inference_weights(state) is state[chosen]
    name = "decoder.0.ffn.up.weight"
    assert not torch.equal(state["ema"][name], state["model"][name])
    assert state["ema_updates"] == 12


def test_max_minutes_stops_training(tmp_path):
    config = write_config(tmp_path, "run", max_steps=10_000, max_minutes=1e-6, valid_every=1000)
    invoke("train", str(config))
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert state["progress"]["step"] == 1
    assert "train.max_minutes" in (tmp_path / "run" / "train.log").read_text()


def test_resume_follows_the_new_learning_rate_and_rewinds_metrics(tmp_path):
    config = write_config(tmp_path, "run", max_steps=6, valid_every=3)
    invoke("train", str(config))
    metrics = RunDir(tmp_path / "run").metrics_file
    metrics.write_text(metrics.read_text() + '{"kind": "train", "step": 99}\n')  # logged after last.pt
    invoke("train", str(config), "--resume", "--set", "train.max_steps=8", "--set", "train.lr=1e-6")
    records = RunDir(tmp_path / "run").read_metrics()
    assert [r["step"] for r in records if r["kind"] == "train"] == list(range(1, 9))
    assert records[-2]["lr"] < 1e-6


def test_interrupt_writes_only_last_pt(tmp_path):
    from seq2seq.checkpoint import save_training_state

    run = RunDir(tmp_path)
    save_training_state(run, {"step": torch.tensor(1)}, 5, keep=3, is_best=True)
    save_training_state(run, {"step": torch.tensor(2)}, 7, keep=3, is_best=False, numbered=False)
    names = sorted(p.name for p in run.checkpoint_dir.iterdir())
    assert names == ["best.pt", "last.pt", "step_5.pt"]
    assert int(load_checkpoint(run.checkpoint_dir / "step_5.pt")["step"]) == 1
    assert int(load_checkpoint(run.checkpoint_dir / "last.pt")["step"]) == 2


def test_tensorboard_gets_the_metrics_of_rank_0(tmp_path):
    pytest.importorskip("tensorboard", reason="the optional extra s2s[tensorboard] (in .[dev]) is missing")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = write_config(tmp_path, "run", max_steps=4, valid_every=2, tensorboard=True)
    invoke("train", str(config))
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/train_loss", "train/lr", "valid/valid_loss", "valid/valid_bleu"} <= tags
    logged = [r["train_loss"] for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "train"]
    assert [e.value for e in events.Scalars("train/train_loss")] == pytest.approx(logged, rel=1e-6)


def test_auto_precision_is_chosen_once_and_kept_on_resume(tmp_path, monkeypatch):
    import seq2seq.training.precision as precision

    calls = []

    def bf16_on_this_cpu():
        calls.append(1)
        return torch.bfloat16, "bf16: pretended"

    monkeypatch.setattr(precision, "auto_cpu_dtype", bf16_on_this_cpu)
    config = write_config(tmp_path, "run", max_steps=2, valid_every=2, precision="auto")
    invoke("train", str(config))
    assert calls == [1]
    assert load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["progress"]["precision"] == "bf16"
    # resumed on a machine that would choose otherwise, it keeps the run's precision
    monkeypatch.setattr(precision, "auto_cpu_dtype", lambda: pytest.fail("chosen again on resume"))
    invoke("train", str(config), "--resume", "--set", "train.max_steps=4")


def fp16_like_trainer(tmp_path: Path, overflow_at: set[int], where: str = "loss", **train: object) -> Trainer:
    """A CPU trainer with the fp16 loss scaler switched on, overflowing at the given steps (1-based):
    `where` "loss", as an fp16 forward pass does (the loss and every gradient inf or NaN), or
    "gradients", the usual case (a finite loss, here made 1000 times too large, whose backward pass
    overflows)."""
    cfg = config_from_dict(tiny_config_dict(tmp_path, valid_bleu=False, **train))
    toks = train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    model = build_model(cfg.model, toks.src.vocab_size, toks.tgt.vocab_size)
    data = ParallelData.from_lists(
        toks.src.encode(["red cat runs", "the big dog"]), toks.tgt.encode(["RUNS CAT RED", "DOG BIG"])
    )
    (tmp_path / "run").mkdir()
    trainer = Trainer(
        cfg, RunDir(tmp_path / "run"), model, toks, {}, data, [ValidSet(data, [], [])], DistInfo(), CPU
    )
    trainer.state.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, enabled=True)
    objective = trainer.net

    def overflowing(src, tgt_in, tgt_out, links):
        loss = objective(src, tgt_in, tgt_out, links)
        if trainer.progress.step + 1 not in overflow_at:
            return loss
        if where == "loss":
            return loss * float("inf")
        loss = loss * 1000
        loss.register_hook(lambda grad: grad * float("inf"))
        return loss

    trainer.net = overflowing
    return trainer


@pytest.mark.parametrize("where", ["loss", "gradients"])
def test_a_step_the_fp16_loss_scaler_skips_is_counted_as_skipped(tmp_path, where):
    """Not a divergence, and its loss is not in the interval's (in either case the scaler skipped it)."""
    trainer = fp16_like_trainer(tmp_path, {3}, where, max_steps=4, log_every=2, valid_every=100)
    trainer.fit()
    train = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "train"]
    assert [(r["step"], r.get("skipped_steps", 0)) for r in train] == [(2, 0), (4, 1)]
    assert all(math.isfinite(r["train_loss"]) for r in train)
    assert train[1]["train_loss"] < 2 * train[0]["train_loss"]  # not the skipped step's loss (x1000)
    assert all(torch.isfinite(w).all() for w in trainer.model.parameters())


def test_every_step_overflowing_in_fp16_is_a_divergence(tmp_path):
    trainer = fp16_like_trainer(tmp_path, {1, 2, 3, 4}, max_steps=4, log_every=2, valid_every=100)
    with pytest.raises(TrainingDiverged, match="overflowed in fp16"):
        trainer.fit()
    assert not (tmp_path / "run" / "checkpoints" / "last.pt").exists()


def test_a_resumed_run_checksums_its_tokenizer_once(tmp_path, monkeypatch):
    config = write_config(tmp_path, "run")
    quick = ["train.max_steps=1", "train.valid_every=1"]
    plan, valid, device = plan_training(train_request(config, quick, "cpu", "new"), DistInfo())
    with claim(plan, DistInfo()) as claimed:
        train(plan, make_inputs(claimed, valid, DistInfo()), DistInfo(), device)
    hashed = count_checksums(monkeypatch)
    plan, valid, _ = plan_training(train_request(config, [], "cpu", "resume"), DistInfo())
    with claim(plan, DistInfo()) as claimed:
        inputs = make_inputs(claimed, valid, DistInfo())
    assert inputs.tokenizer_sums == plan.run.read_inputs()["tokenizer"]
    assert hashed["spm.model"] == 1  # compared with last.pt's, then recorded: the same hash
