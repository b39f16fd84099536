"""Guided alignment through `s2s train`: eflomal's alignments are made when the corpus is prepared,
the guided head learns to follow them (its cost is logged as align_loss), weight 0 trains as s2s always
did, a resumed run continues exactly, a missing aligner is an `error:` line, and the head that was
trained is the one both engines show as the attention map."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from seq2seq.data import alignments
from seq2seq.data.links import reference_attention
from seq2seq.data.prepared import load_prepared_part
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.layers import CrossAttention
from seq2seq.run.layout import RunDir
from seq2seq.special import BOS, EOS
from seq2seq.translate.cross_attention import GuidedHead, LastLayerMean
from seq2seq.translate.placement import Placement
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import tiny_config_dict
from tests.helpers import run_cli
from tests.unit.data.test_alignments import TrueAligner

pytestmark = pytest.mark.slow
STEPS = 60


def write_config(directory: Path, name: str, prepared: Path, **train: object) -> Path:
    raw = tiny_config_dict(directory, max_steps=STEPS, valid_every=STEPS, valid_bleu=False, **train)
    raw["run_dir"], raw["data"]["prepared_dir"] = str(directory / name), str(prepared)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def train(config: Path, *args: str) -> None:
    result = run_cli("train", str(config), *args)
    assert result.exit_code == 0, result.output


def records(run: Path) -> list[dict]:
    return [r for r in RunDir(run).read_metrics() if r["kind"] == "train"]


@dataclass(frozen=True)
class Runs:
    guided: Path
    plain: Path
    prepared: Path  # both runs' prepared corpus (one tokenizer): eflomal's alignments, made once


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """A run trained with guidance on eflomal's alignments, and one without on the same pairs and
    tokenizer, which must never compute a head explicitly nor align anything."""
    pytest.importorskip("eflomal", reason="eflomal is the optional extra s2s[align] (in .[dev])")
    directory = tmp_path_factory.mktemp("guided")
    prepared = directory / "prepared"
    train(write_config(directory, "guided", prepared, guided_alignment={"weight": 1.0}))
    plain = write_config(directory, "plain", prepared, tokenizer_from=str(directory / "guided"))
    with pytest.MonkeyPatch.context() as never:
        for owner, name in (
            (CrossAttention, "_explicit_first_head"),
            (Seq2SeqTransformer, "guided_features"),
        ):
            never.setattr(owner, name, lambda *a, **k: pytest.fail("an explicit head without guidance"))
        never.setattr(alignments, "align_words", lambda *a: pytest.fail("aligned without guidance"))
        train(plain)
    yield Runs(directory / "guided", directory / "plain", prepared)


def head_on_links(run: Path, prepared: Path) -> tuple[float, float]:
    """Head 0's attention on the reference links of 100 training pairs: the mean mass each linked
    target row puts on its linked sources, and the alignment cost per linked row."""
    model = Translator.load(run, ["last"], Placement("cpu", "fp32")).first_model
    assert isinstance(model, Seq2SeqTransformer)
    batch = load_prepared_part(prepared / "train", links=True).batch(range(100))
    assert batch.links is not None
    with torch.no_grad():
        attention = model.guided_features(batch.src, batch.tgt_in, 0)[1]  # (B, T, S)
    reference = reference_attention(batch.links, (attention.size(0), attention.size(1), attention.size(2)))
    rows = (reference > 0).any(-1)
    mass = (attention * (reference > 0)).sum(-1)[rows].mean()
    cost = -(reference * torch.log(attention + 1e-6)).sum() / rows.sum()
    return float(mass), float(cost)


def test_the_guided_head_learns_the_links_and_its_cost_is_logged(runs):
    manifest = json.loads((runs.prepared / "train" / "manifest.json").read_text())
    assert manifest["alignments"]["counts"]["links"] > manifest["pairs"]  # eflomal's, over pieces
    guided, plain = records(runs.guided), records(runs.plain)
    assert len(guided) == len(plain) == STEPS
    assert all(r["align_loss"] > 0 for r in guided) and not any("align_loss" in r for r in plain)
    assert "| align " in (runs.guided / "train.log").read_text(encoding="utf-8")
    (guided_mass, guided_cost), (plain_mass, plain_cost) = (
        head_on_links(run, runs.prepared) for run in (runs.guided, runs.plain)
    )
    assert guided_mass > plain_mass + 0.1 and guided_cost < plain_cost - 0.5, (guided_mass, plain_mass)


def test_both_engines_show_the_head_that_was_trained(runs, tmp_path):
    ours = Translator.load(runs.guided, placement=Placement("cpu", "fp32"))
    assert ours.alignment == GuidedHead(0)
    plain = Translator.load(runs.plain, placement=Placement("cpu", "fp32"))
    assert plain.alignment == LastLayerMean(1, 2)
    request = Request.of(ours.options())
    shown = ours.attention_map("red cat runs", "RUNS CAT RED", request)
    encode = ours.tokenizers.src.encode
    src = torch.tensor([[*encode(["red cat runs"])[0], EOS]])  # (1, S), as the map's source is laid out
    tgt = torch.tensor([[BOS, *encode(["RUNS CAT RED"])[0]]])  # (1, T)
    model = ours.first_model
    assert isinstance(model, Seq2SeqTransformer)
    with torch.no_grad():
        head = model.guided_features(src, tgt, 0)[1][0]
    assert torch.allclose(torch.from_numpy(shown.weights), head)
    pytest.importorskip("ctranslate2", reason="CTranslate2 is an optional extra: s2s[ct2]")
    from seq2seq.ct2.conversion import export_ctranslate2
    from seq2seq.ct2.runtime import CT2Translator

    export_ctranslate2(runs.guided, "best", tmp_path / "export", None)
    theirs = CT2Translator.load(tmp_path / "export", Placement("cpu"))
    assert torch.allclose(
        torch.from_numpy(theirs.attention_map("red cat runs", "RUNS CAT RED", request).weights),
        head,
        atol=1e-4,
    )


def test_a_resumed_guided_run_continues_exactly(tmp_path, monkeypatch):
    monkeypatch.setattr(alignments, "align_words", TrueAligner())  # deterministic: the runs may align apart
    whole = write_config(tmp_path, "whole", tmp_path / "whole_prepared", guided_alignment={"weight": 0.3})
    train(whole, "--set", "train.max_steps=12")
    parts = write_config(tmp_path, "parts", tmp_path / "parts_prepared", guided_alignment={"weight": 0.3})
    train(parts, "--set", "train.max_steps=5")
    train(parts, "--resume", "--set", "train.max_steps=12")
    keys = ("step", "train_loss", "align_loss", "lr")
    expected = [tuple(r[k] for k in keys) for r in records(tmp_path / "whole")]
    assert [r[0] for r in expected] == list(range(1, 13))
    assert [tuple(r[k] for k in keys) for r in records(tmp_path / "parts")] == expected


def test_a_missing_aligner_is_an_error_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "eflomal", None)  # `import eflomal` fails, as when it is not installed
    result = run_cli(
        "train", str(write_config(tmp_path, "run", tmp_path / "prepared", guided_alignment={"weight": 0.1}))
    )
    assert result.exit_code == 2, result.output
    assert (
        'error: word alignment needs eflomal, an optional extra: pip install --no-cache-dir "s2s[align]"'
        in result.output
    )
    assert "Traceback" not in result.output
