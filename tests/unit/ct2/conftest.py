"""The runs and models both engines are compared on: a trained run and its export, and models whose
outputs run to their length limits or often stop at once (what s2s's search forbids or limits)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq.config import ModelConfig
from seq2seq.models.build import build_model
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import run_cli

ctranslate2 = pytest.importorskip("ctranslate2", reason="CTranslate2 publishes no wheel for this platform")
from seq2seq.ct2.conversion import write_model  # noqa: E402
from seq2seq.ct2.runtime import CT2Translator  # noqa: E402

UNDER_TRAINED = ["tiny run", "random post-norm", "random pre-norm"]


@pytest.fixture(scope="package")
def trained(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> tuple[Path, Path]:
    """The shared "confident" run (greedy choices with clear margins) and its export."""
    run = trained_run("confident").run
    export = tmp_path_factory.mktemp("ct2") / "export"
    result = run_cli("export", str(run), str(export))
    assert result.exit_code == 0, result.output
    return run, export


@pytest.fixture(scope="package")
def under_trained(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> Callable:
    """`under_trained(kind)`: (s2s model, the CTranslate2 engine of the same weights) for a kind of
    UNDER_TRAINED: the 12-step tiny run (its outputs run to the length limit), or random weights
    whose <pad>, <bos> and </s> are often the first choice (what s2s's search forbids or limits)."""
    run = trained_run("tiny").run
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    made = {}

    def get(kind: str) -> tuple[torch.nn.Module, CT2Translator]:
        if kind not in made:
            directory = tmp_path_factory.mktemp("ct2_" + kind.replace(" ", "_"))
            model, config = ours.model, ours.config
            if kind != "tiny run":
                norm = kind.split()[1].removesuffix("-norm")
                cfg = ModelConfig(
                    d_model=32, heads=4, ffn_dim=48, encoder_layers=2, decoder_layers=2, norm=norm
                )
                torch.manual_seed(0)
                vocab = ours.tokenizers.tgt.vocab_size
                model, config = build_model(cfg, vocab, vocab).eval(), dataclasses.replace(config, model=cfg)
                with torch.no_grad():  # output and embedding weights are tied: larger rows, larger logits
                    model.output.weight[[PAD, BOS]] *= 2
                    model.output.weight[EOS] *= 2 if norm == "post" else 4
            write_model(model, ours.tokenizers, directory, None)
            engine = ctranslate2.Translator(str(directory), device="cpu")
            made[kind] = model, CT2Translator(engine, ours.tokenizers, config, {}, directory)
        return made[kind]

    return get
