"""Every placement option is checked the same way whichever engine runs it: a name no engine knows is
an `error:` under every `--engine`, and an option an engine cannot honour is an `error:` naming the
option and the engine, never silently dropped (`--precision` is s2s's decoder's; CTranslate2 takes
its compute type from `--quantize`). Over translate and evaluate through the command line, and serve
through the engine choice it shares with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.commands.engines import choose_engine
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.options import DecodeOverrides
from seq2seq.translate.placement import Placement
from tests.conftest import TrainedRun
from tests.helpers import run_cli

pytest.importorskip("ctranslate2", reason="CTranslate2 has no wheel for this platform")

ENGINES = ["auto", "s2s", "ctranslate2"]


def verb_args(verb: str, run: Path, tmp_path: Path) -> list[str]:
    src = tmp_path / "in.txt"
    src.write_text("red cat\n", encoding="utf-8")
    if verb == "translate":
        return ["translate", str(run), "-i", str(src), "-o", str(tmp_path / "out.txt")]
    return ["evaluate", str(run), "--src", str(src), "--ref", str(src), "--out", str(tmp_path / "out.txt")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("verb", ["translate", "evaluate"])
def test_a_precision_no_engine_knows_is_refused_under_every_engine(
    tiny_run: TrainedRun, tmp_path, verb, engine
):
    result = run_cli(*verb_args(verb, tiny_run.run, tmp_path), "--engine", engine, "--precision", "nonsense")
    assert result.exit_code == 2, result.output
    assert "--precision 'nonsense'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("verb", ["translate", "evaluate"])
def test_ctranslate2_refuses_a_precision_it_cannot_honour(tiny_run: TrainedRun, tmp_path, verb, precision):
    """Before: `--engine ctranslate2 --precision fp16` decoded int8 and said nothing."""
    args = verb_args(verb, tiny_run.run, tmp_path)
    result = run_cli(*args, "--engine", "ctranslate2", "--precision", precision)
    assert result.exit_code == 2, result.output
    assert f"--precision {precision}" in result.output and "--quantize" in result.output
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize(
    "follow", [["--engine", "ctranslate2", "--quantize", "float32"], ["--engine", "s2s"]]
)
def test_the_advice_to_use_quantize_or_s2s_s_decoder_is_followed(tiny_run: TrainedRun, tmp_path, follow):
    args = verb_args("translate", tiny_run.run, tmp_path)
    refused = run_cli(*args, "--engine", "ctranslate2", "--precision", "fp32")
    assert refused.exit_code == 2 and "--quantize" in refused.output and "--engine s2s" in refused.output
    followed = [*follow, "--precision", "fp32"] if "s2s" in follow else follow
    result = run_cli(*args, *followed)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").count("\n") == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_choice_that_serve_shares_checks_the_same(tiny_run: TrainedRun, engine):
    with pytest.raises(Seq2SeqError, match="--precision 'nonsense'"):
        choose_engine(tiny_run.run, engine, DecodeOverrides(), Placement("cpu", "nonsense"))
    if engine == "ctranslate2":
        with pytest.raises(Seq2SeqError, match="CTranslate2 does not take it"):
            choose_engine(tiny_run.run, engine, DecodeOverrides(), Placement("cpu", "fp16"))
