"""The figures of docs/augmentation.md are remade by `python -m experiments.augmentation.augment_cost
CONFIG`: it runs on a tiny config, writes nothing outside a temporary directory, and refuses a config
without augmentation."""

from __future__ import annotations

import pytest
import yaml

from experiments.augmentation.augment_cost import main
from tests.conftest import tiny_config_dict
from tests.helpers import tree_digest

pytestmark = pytest.mark.slow


def test_both_tables_are_made_for_a_tiny_augmented_config(tmp_path, capsys):
    raw = tiny_config_dict(tmp_path)
    data = raw["data"]
    augment = {"upper": 0.3, "title": 0.1, "typos": 0.3, "nopunct": 0.2}
    data["corpora"] = [
        {"name": "tiny", "src": data.pop("train_src"), "tgt": data.pop("train_tgt"), "augment": augment}
    ]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    before = tree_digest(tmp_path)
    assert main([str(config)]) == 0
    out = capsys.readouterr().out
    assert "| source, upper |" in out and "| target, nopunct |" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| a")}
    assert set(rows) == {"as given", "augmented"}
    assert tree_digest(tmp_path) == before  # no run directory, nothing prepared beside the config
    raw["data"]["corpora"][0].pop("augment")
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert main([str(config)]) == 2
    assert "error: no corpus of" in capsys.readouterr().err
