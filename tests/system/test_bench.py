"""The benchmarks (`python -m benchmarks`) run: every section for a few steps on the tiny run, a
missing peer is skipped with a note, a failing section does not stop the others, and what they
measure is measured right (the reference model trains through `TrainingLoss`; a child's peak RSS is
its own)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import __main__ as bench
from benchmarks import engines, fairseq, memory
from benchmarks.reference import ReferenceTransformer
from seq2seq.config import ModelConfig
from seq2seq.training import precision
from seq2seq.training.distributed import DistInfo
from seq2seq.training.loss import TrainingLoss, sequence_loss
from seq2seq.training.state import Progress
from tests.conftest import ROOT, TrainedRun, random_ids

pytestmark = pytest.mark.slow

FEW_STEPS = ["--models", "recipe", "--warmup", "1", "--steps", "2", "--matmul-size", "32"]
FEW_LINES = ["--limit", "8", "--beams", "1", "--fractions", "", "--repeat", "1", "--grid-tokens", "500"]
SMALL_DATA = ["--pairs", "200", "--no-ddp"]  # torchrun with 2 ranks would double the test's time
FEW_CLIENTS = ["--clients", "2", "--rounds", "1", "--serve-beam", "1", "--time-limit", "30"]
FEW_CLIENTS += ["--mixed-clients", "1,1", "--serve-precision", "fp32", "--startup-runs", "1"]


def bench_args(run: TrainedRun, sections: str) -> list[str]:
    """Options for `sections` on the tiny run, each section as short as it goes."""
    files = ["--config", str(run.config), "--run-dir", str(run.run), "--src", str(run.data / "valid.src")]
    files += [
        "--ref",
        str(run.data / "valid.tgt"),
        "--sections",
        sections,
        "--runs",
        str(run.run),
        "--shortlist",
        "5",
    ]
    return [*files, *FEW_STEPS, *FEW_LINES, *SMALL_DATA, *FEW_CLIENTS]


def test_every_section_runs_for_a_few_steps(tiny_run: TrainedRun, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    command = [sys.executable, "-m", "benchmarks", *bench_args(tiny_run, ",".join(bench.SECTIONS))]
    command += ["--threads", "1", "--json", str(out)]
    user_cache = tmp_path / "user_cache"  # where `s2s translate` keeps its exports for this user
    env = {k: v for k, v in os.environ.items() if k != "S2S_CACHE_DIR"}
    env |= {"OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(user_cache)}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["failed"] == {}
    assert {"cpu", "cores", "memory_gib", "torch", "python", "date"} <= set(report["machine"])
    ran = [s for s in bench.SECTIONS if s in report]
    skipped = [note.split(":")[0] for note in report["skipped"]]
    assert sorted(ran + skipped) == sorted(bench.SECTIONS)
    assert {"train", "decode", "engines", "data", "serve", "runs", "hf", "startup"} <= set(ran)  # peers here
    impls = {r["impl"] for r in report["train"]["results"]}
    assert impls == {"s2s", "nn.Transformer"}  # the reference model trains too
    assert all(r["peak_rss_mib"] > 0 for r in report["engines"]["results"])
    check_the_default(report)
    assert not user_cache.exists()  # the default's exports went to a cache of the benchmark's own
    serve = report["serve"]
    assert serve["wrong"] == 0 and serve["missing"] == 0
    servers = ("static", "continuous", "default")
    assert {(r["batching"], r["clients"]) for r in serve["results"]} == {(s, 2) for s in servers}
    assert [m["batching"] for m in serve["mixed"]] == list(servers)
    assert serve["server_exit_codes"] == dict.fromkeys(servers, 0)
    default = next(r for r in serve["results"] if r["batching"] == "default")
    assert default["engine"].startswith("ctranslate2") and default["ratio"] > 0
    runs = {(r["engine"], r["quantize"], r["shortlist"]): r for r in report["runs"]["results"]}
    assert set(runs) == {
        ("s2s", None, 0),
        ("s2s", "int8", 0),
        ("ctranslate2", "int8", 0),
        ("ctranslate2", "int8", 5),
    }
    assert runs["s2s", None, 0]["vs_reference"] == 1.0 and all(r["parameters"] > 0 for r in runs.values())
    hf = {(r["engine"], r["beam"]) for r in report["hf"]["results"]}
    assert hf == {(engine, 1) for engine in ("s2s", "ctranslate2", "transformers")}
    assert all(r["load_seconds"] > 0 and r["sentences_per_s"] > 0 for r in report["hf"]["results"])
    startup = report["startup"]["results"]
    assert all(r["median_s"] > 0 for r in startup)
    if not torch.cuda.is_available():  # on a CPU the default engine is CTranslate2, which needs no torch
        assert report["startup"]["default_engine"].startswith("ctranslate2")
        # s2s's own decoder is torch; the two refusals answer before torch loads
        assert [r["imports_torch"] for r in startup] == [False, False, False, True, False, False]
    for name in ran:
        assert f"== {name}" in done.stdout


def check_the_default(report: dict) -> None:
    """The engines section's default rows: `s2s translate RUN` with no flags, CTranslate2 here, over an
    export its first use made and chose, measured against CTranslate2 direct in int8."""
    engines = report["engines"]
    rows = {(r["engine"], r["quantize"], r["beam"]): r for r in engines["results"]}
    default = rows["default", None, 1]
    assert default["chosen"] == "ctranslate2" and default["sentences_per_s"] > 0 and "bleu" in default
    peer = rows["ct2 direct", "int8", 1]
    assert default["vs_ctranslate2"] == default["sentences_per_s"] / peer["sentences_per_s"]
    uses = engines["default"]
    assert uses["decisions"]["compute_type"] in ("int8", "float32")
    assert default["dtype"].startswith(uses["decisions"]["compute_type"])  # what it decided is what runs
    for use in ("first_use", "later_use"):
        assert uses[use]["process_seconds"] > uses[use]["choose_seconds"] > 0
    # CTranslate2 decodes without torch; only making the export reads the checkpoint with it
    assert not default["imports_torch"] and not uses["later_use"]["imports_torch"]
    assert uses["first_use"]["imports_torch"]
    assert "default / CT2 direct int8, beam 1, sent/s" in report["targets"] or (
        "default+shortlist / CT2 direct int8, beam 1, sent/s" in report["targets"]
    )


def test_a_missing_peer_is_skipped_with_a_note(
    tiny_run: TrainedRun, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_find_spec = engines.importlib.util.find_spec
    monkeypatch.setattr(
        engines.importlib.util,
        "find_spec",
        lambda name: None if name == "ctranslate2" else real_find_spec(name),
    )
    monkeypatch.setattr(fairseq, "imports_fairseq", lambda python: False)
    assert bench.main(bench_args(tiny_run, "engines,fairseq")) == 0
    out = capsys.readouterr().out
    assert "== engines: skipped, CTranslate2 is not installed here" in out
    assert "== fairseq: skipped, this interpreter cannot import fairseq" in out
    assert "skipped engines:" in out.split("== targets")[1]


def test_a_failing_section_reports_an_error_and_the_others_still_run(
    tiny_run: TrainedRun, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(opts: object, device: torch.device) -> dict:
        raise AttributeError("'ReferenceTransformer' object has no attribute 'features'")

    def fine(opts: object, device: torch.device) -> dict:
        return {"ok": 1}

    monkeypatch.setitem(bench.SECTIONS, "train", dataclasses.replace(bench.SECTIONS["train"], run=broken))
    decode = bench.Section(fine, lambda section: "== decode: fine")
    monkeypatch.setitem(bench.SECTIONS, "decode", decode)
    assert bench.main(bench_args(tiny_run, "train,decode")) == 1
    out = capsys.readouterr().out
    assert "== train: error: AttributeError: 'ReferenceTransformer' object has no attribute 'features'" in out
    assert "== decode: fine" in out
    assert "failed train: AttributeError" in out


def test_a_usage_mistake_exits_2_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--sections", "train,trian"]) == 2
    assert "--sections: trian given; choose from train," in capsys.readouterr().err


def test_the_reference_model_trains_through_the_chunked_loss() -> None:
    cfg = ModelConfig(d_model=16, heads=2, ffn_dim=32, encoder_layers=1, decoder_layers=1, dropout=0.0)
    torch.manual_seed(0)
    model = ReferenceTransformer(cfg, 23, 23).eval()
    src, tgt_in, tgt_out = random_ids(3, 7), random_ids(3, 5, seed=1), random_ids(3, 5, seed=2)
    loss = TrainingLoss(model, label_smoothing=0.1)(src, tgt_in, tgt_out)
    torch.testing.assert_close(loss, sequence_loss(model(src, tgt_in), tgt_out, 0.1))
    loss.backward()
    assert model.output.weight.grad is not None and model.output.weight.grad.abs().sum() > 0


def test_a_childs_peak_rss_is_its_own_not_its_parents(tmp_path: Path) -> None:
    """A small child spawned by a large parent: the kernel's rusage of the child (`os.wait4`, or
    RUSAGE_SELF inside it) reports the parent's peak, which is why memory.py reads VmHWM."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("needs Linux's /proc")
    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"\1" * len(ballast[::4096])  # touch every page: 300 MiB resident
    peak_file = tmp_path / "peak"
    child = subprocess.Popen(
        memory.measured_command(sys.executable, "this", [], peak_file), stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    assert status == 0
    assert memory.read_peak(peak_file) < 150  # the child: an interpreter printing a poem
    assert usage.ru_maxrss / 1024 > 300  # what ru_maxrss says of the same child
    del ballast


def test_the_fairseq_table_names_what_auto_chose(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `auto` row's label is read from the line train.log has, for either choice."""
    for dtype, word in ((torch.bfloat16, "bf16"), (None, "fp32")):
        monkeypatch.setattr(precision, "auto_cpu_dtype", lambda d=dtype, w=word: (d, f"{w}: measured on X"))
        caplog.clear()
        with caplog.at_level("INFO", logger="seq2seq.training.trainer"):
            precision.choose_cpu_precision(Progress(), DistInfo())
        assert fairseq.auto_choice(caplog.text) == word
    assert fairseq.auto_choice("no such line") == "not logged"
