"""A minutes-long smoke run of the Multi30k recipe (the real config, a few steps), when the corpus is here.

The corpus is read from data/multi30k (scripts/fetch_multi30k.sh), or from S2S_MULTI30K.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from seq2seq.run.layout import RunDir
from tests.conftest import ROOT
from tests.helpers import MULTI30K_DIR, run_cli

CORPUS = MULTI30K_DIR
VALID_LINES = 16  # the smoke run's validation set

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (CORPUS / "train.de").is_file(), reason=f"no Multi30k corpus at {CORPUS}"),
]


@pytest.mark.parametrize("recipe", ["multi30k_de_en", "multi30k_en_de"])
def test_recipe_smoke_run(tmp_path, recipe):
    data = tmp_path / "multi30k"
    fetch = subprocess.run(
        ["bash", "scripts/fetch_multi30k.sh", "--from", str(CORPUS), "--out", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert fetch.returncode == 0, fetch.stderr
    assert len((data / "train.de").read_text(encoding="utf-8").splitlines()) == 29000
    src, tgt = ("de", "en") if recipe == "multi30k_de_en" else ("en", "de")
    # validated on val's first lines: an 8-step model writes every line to its longest, and the default
    # engine's first use below decodes the run's whole validation set (up to 200 lines) three times
    for lang in (src, tgt):
        lines = (data / f"val.{lang}").read_text(encoding="utf-8").splitlines(keepends=True)
        (data / f"val_head.{lang}").write_text("".join(lines[:VALID_LINES]), encoding="utf-8")
    overrides = {
        "run_dir": tmp_path / "run",
        "data.train_src": data / f"train.{src}",
        "data.train_tgt": data / f"train.{tgt}",
        "data.valid_src": data / f"val_head.{src}",
        "data.valid_tgt": data / f"val_head.{tgt}",
        "train.max_minutes": 0,
        "train.max_steps": 8,
        "train.valid_every": 4,
        "train.log_every": 4,
        "train.max_tokens": 2048,  # the recipe's model and data; a smaller batch keeps the smoke short
    }
    args = ["train", str(ROOT / "configs" / f"{recipe}.yaml")]
    for key, value in overrides.items():
        args += ["--set", f"{key}={value}"]
    result = run_cli(*args)
    assert result.exit_code == 0, result.output
    valid = [r for r in RunDir(tmp_path / "run").read_metrics() if r["kind"] == "valid"]
    assert [r["step"] for r in valid] == [4, 8], valid
    assert valid[1]["valid_loss"] < valid[0]["valid_loss"], valid
    # the default engine (CTranslate2, the export cache's first use: its val check decodes 200 lines)
    # on one recipe's run, s2s's own decoder on the other's
    engine = "auto" if recipe == "multi30k_de_en" else "s2s"
    out = run_cli(
        "translate",
        str(tmp_path / "run"),
        "--beam",
        "2",
        "--engine",
        engine,
        input="Ein Mann fährt Fahrrad.\n\nZwei Hunde spielen im Schnee.\n",
    )
    assert out.exit_code == 0, out.output
    assert out.stdout.count("\n") == 3 and out.stdout.split("\n")[1] == "", out.stdout


def test_the_fetch_script_takes_the_languages_asked_for_and_refuses_others(tmp_path):
    def fetch(langs: str, out: Path) -> subprocess.CompletedProcess[str]:
        command = ["bash", "scripts/fetch_multi30k.sh", "--from", str(CORPUS), "--out", str(out)]
        return subprocess.run([*command, "--langs", langs], cwd=ROOT, capture_output=True, text=True)

    done = fetch("de,en,fr,cs", tmp_path / "all")
    assert done.returncode == 0, done.stderr
    splits = {"train": 29000, "val": 1014, "test_2016_flickr": 1000}
    expected = {f"{split}.{lang}" for split in splits for lang in ("de", "en", "fr", "cs")}
    assert {p.name for p in (tmp_path / "all").iterdir()} == expected
    for name in expected:  # parallel line by line across the languages
        lines = (tmp_path / "all" / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) == splits[name.rsplit(".", 1)[0]], name
    refused = fetch("de,xx", tmp_path / "none")
    assert refused.returncode == 2 and "has de, en, fr and cs, not 'xx'" in refused.stderr
    assert not (tmp_path / "none").exists()
