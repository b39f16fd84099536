"""Every per-corpus setting is read from its own corpus wherever it is used: a de->en and an en->de
corpus in one run, each naming its own languages, keep their own language rule, tag, weight and
cleaning rules through the whole set-up of `s2s train` (the tokenizer, the prepared corpus and its
manifest, the epoch's mixture, the validation sets), whatever the other corpus or data.* says."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from seq2seq.config import Config
from seq2seq.data.control import control_id
from seq2seq.data.prepared import corpus_mixture, load_prepared_part, read_manifests
from seq2seq.training.distributed import DistInfo
from seq2seq.training.request import train_request
from seq2seq.training.setup import RunInputs, claim, make_inputs
from seq2seq.training.training_plan import plan_training
from tests.conftest import tiny_config_dict

GERMAN = [
    "Der Hund schläft unter dem großen Baum im Garten.",
    "Zwei Kinder spielen am Nachmittag mit einem roten Ball.",
    "Eine Frau liest ein Buch in der Bibliothek.",
    "Der alte Mann trinkt jeden Morgen eine Tasse Kaffee.",
    "Die Katze sitzt auf dem Fenster und schaut nach draußen.",
    "Wir fahren morgen mit dem Zug nach Berlin.",
]
ENGLISH = [
    "The dog is sleeping under the big tree in the garden.",
    "Two children are playing with a red ball in the afternoon.",
    "A woman is reading a book in the library.",
    "The old man drinks a cup of coffee every morning.",
    "The cat is sitting on the window and looking outside.",
    "Tomorrow we are taking the train to Berlin.",
]
FRENCH = "Le train part à huit heures du matin pour Paris."
COPY = "Hamburg Berlin München Köln"
DIRECTIONS = {"de_en": ("de", "en"), "en_de": ("en", "de")}


def write_pairs(path: Path, pairs: list[tuple[str, str]]) -> str:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return str(path)


def set_up(tmp_path: Path, settings: dict[str, dict]) -> tuple[Config, RunInputs]:
    """`s2s train`'s set-up of a de->en and an en->de corpus of real sentences, each with one pair whose
    target is French and one untranslated copy, and `settings[name]` on corpus `name` alone
    (`settings["data"]` on data.*); returns the run's config and what the set-up made."""
    raw = tiny_config_dict(tmp_path)
    data = raw["data"]
    planted = {
        "de_en": ("Der Zug fährt um acht Uhr ab.", FRENCH),
        "en_de": ("The train leaves at eight.", FRENCH),
    }
    sides = {"de_en": (GERMAN, ENGLISH), "en_de": (ENGLISH, GERMAN)}
    data["corpora"] = [
        {
            "name": name,
            "tsv": write_pairs(
                tmp_path / f"{name}.tsv", [*zip(*sides[name], strict=True), planted[name], (COPY, COPY)]
            ),
            "src_lang": src,
            "tgt_lang": tgt,
            **settings.get(name, {}),
        }
        for name, (src, tgt) in DIRECTIONS.items()
    ]
    data["valid"] = [
        {"src": data["valid_src"], "tgt": data["valid_tgt"], "src_lang": "de", "tgt_lang": "en"},
        {"src": data["valid_tgt"], "tgt": data["valid_src"], "src_lang": "en", "tgt_lang": "de"},
    ]
    for key in ("train_src", "train_tgt", "valid_src", "valid_tgt"):
        del data[key]
    data |= settings.get("data", {})  # the run's own settings, which no corpus's may follow
    data["max_len"], raw["model"]["max_positions"] = 128, 130
    raw["tokenizer"]["control_tokens"] = ["<bt>"]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    plan, valid, _ = plan_training(train_request(config, [], "cpu", "new"), DistInfo())
    with claim(plan, DistInfo()) as claimed:
        return plan.cfg, make_inputs(claimed, valid, DistInfo())


def manifests_of(cfg: Config, inputs: RunInputs) -> dict[str, dict[str, Any]]:
    return read_manifests(inputs.corpus_dir, cfg.data.training_corpora())


def sources(inputs: RunInputs, name: str) -> list[list[int]]:
    data = load_prepared_part(inputs.corpus_dir / name)
    return data.batch(np.arange(len(data))).src.tolist()


def languages_of_the_corpus(cfg: Config, inputs: RunInputs) -> None:
    manifests = manifests_of(cfg, inputs)
    for name, languages in DIRECTIONS.items():
        counts = manifests[name]["counts"]
        # every real pair kept; the French target and the copy (one language on both sides) dropped
        assert (counts["kept"], counts["wrong_language"]) == (len(GERMAN), 2), (name, counts)
        assert manifests[name]["made_from"]["clean"]["languages"] == list(languages)


def tag_of_the_corpus(cfg: Config, inputs: RunInputs) -> None:
    tokenizer = inputs.tokenizers.src
    bt, to_en, to_de = (control_id(tokenizer, t) for t in ("<bt>", "<2en>", "<2de>"))
    assert all(row[:2] == [to_de, bt] for row in sources(inputs, "en_de"))
    assert all(row[0] == to_en and bt not in row for row in sources(inputs, "de_en"))


def weight_of_the_corpus(cfg: Config, inputs: RunInputs) -> None:
    manifests = manifests_of(cfg, inputs)
    kept = [manifests[name]["pairs"] for name in DIRECTIONS]
    mixture = corpus_mixture(manifests, cfg.data.training_corpora(), cfg.data.temperature)
    assert mixture.counts().tolist() == [kept[0], 3 * kept[1]]


def cleaning_rules_of_the_corpus(cfg: Config, inputs: RunInputs) -> None:
    manifests = manifests_of(cfg, inputs)
    assert [manifests[name]["counts"]["copy"] for name in DIRECTIONS] == [1, 0]
    assert [manifests[name]["made_from"]["clean"]["copies"] for name in DIRECTIONS] == [True, False]


def languages_of_the_validation_set(cfg: Config, inputs: RunInputs) -> None:
    tokenizer = inputs.tokenizers.src
    assert [v.direction for v in inputs.valid] == ["de-en", "en-de"]
    for valid, token in zip(inputs.valid, ("<2en>", "<2de>"), strict=True):
        rows = valid.data.batch(np.arange(len(valid.data))).src.tolist()
        assert all(row[0] == control_id(tokenizer, token) for row in rows)


BOTH = {name: {"clean": {"langid": True}} for name in DIRECTIONS}
ONE_WAY = {"data": {"src_lang": "de", "tgt_lang": "en"}}  # a bilingual run's languages, here neither's


@pytest.mark.slow
@pytest.mark.parametrize(
    ("settings", "check"),
    [
        pytest.param(BOTH, languages_of_the_corpus, id="languages"),
        pytest.param(BOTH | ONE_WAY, languages_of_the_corpus, id="languages-over-data"),
        pytest.param({"en_de": {"tag": "<bt>"}}, tag_of_the_corpus, id="tag"),
        pytest.param({"en_de": {"weight": 3.0}}, weight_of_the_corpus, id="weight"),
        pytest.param({"de_en": {"clean": {"copies": True}}}, cleaning_rules_of_the_corpus, id="cleaning"),
        pytest.param({}, languages_of_the_validation_set, id="validation"),
    ],
)
def test_each_corpus_is_prepared_by_its_own_settings(
    tmp_path: Path, settings: dict[str, dict], check: Callable[[Config, RunInputs], None]
) -> None:
    check(*set_up(tmp_path, settings))
