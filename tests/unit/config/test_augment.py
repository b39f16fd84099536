"""A corpus's `augment:` block is checked like every section: unknown keys with the closest valid one,
each share in [0, 1], upper and title together at most 1, subword_alpha in (0, 1], all problems at
once."""

from __future__ import annotations

import pytest

from seq2seq.config import config_from_dict
from seq2seq.config.augment import AugmentConfig
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict


def with_augment(tmp_path, augment: object) -> dict:
    raw = tiny_config_dict(tmp_path)
    data = raw["data"]
    corpus = {"name": "tiny", "src": data.pop("train_src"), "tgt": data.pop("train_tgt"), "augment": augment}
    data["corpora"] = [corpus]
    return raw


def test_a_valid_block_is_read_and_none_modifies_nothing(tmp_path):
    cfg = config_from_dict(
        with_augment(tmp_path, {"upper": 0.1, "title": 0.05, "typos": 0.1, "nopunct": 0.1})
    )
    augment = cfg.data.corpora[0].augment
    assert augment == AugmentConfig(upper=0.1, title=0.05, typos=0.1, nopunct=0.1) and augment.active
    assert augment.describe() == "upper 0.1, title 0.05, typos 0.1, nopunct 0.1"
    assert not config_from_dict(tiny_config_dict(tmp_path)).data.training_corpora()[0].augment.active


def test_every_mistake_is_named_at_once(tmp_path):
    raw = with_augment(
        tmp_path, {"uper": 0.1, "typos": 1.5, "nopunct": -0.1, "upper": 0.7, "title": 0.4, "subword_alpha": 0}
    )
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    assert "data.corpora[0].augment.uper: unknown key (did you mean data.corpora[0].augment.upper?)" in str(
        info.value
    )
    raw["data"]["corpora"][0]["augment"].pop("uper")
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    message = str(info.value)
    assert "data.corpora[0].augment.typos: must be in [0, 1]" in message
    assert "data.corpora[0].augment.nopunct: must be in [0, 1]" in message
    assert "data.corpora[0].augment: upper + title must be at most 1" in message
    assert "data.corpora[0].augment.subword_alpha: must be in (0, 1]" in message


def test_a_block_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"data\.corpora\[0\]\.augment: expected a mapping"):
        config_from_dict(with_augment(tmp_path, 0.1))


def test_the_validation_copy_is_checked_and_names_what_best_direction_may_read(tmp_path):
    raw = tiny_config_dict(tmp_path, valid_augment={"upper": 0.2, "typos": 0.2}, best_direction="augmented")
    cfg = config_from_dict(raw)
    assert cfg.train.validated([""]) == ["given", "augmented"]
    assert cfg.train.validated(["de-en"]) == ["de-en", "de-en+augmented"]
    with pytest.raises(ConfigError, match=r"'augmented' is not a validated direction \(none"):
        config_from_dict(tiny_config_dict(tmp_path, best_direction="augmented"))
    raw = tiny_config_dict(tmp_path, valid_augment={"noise": 0.1, "typos": 2, "subword": 0.5})
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    assert "train.valid_augment.noise: must be 0" in str(info.value)
    assert "train.valid_augment.subword: must be 0" in str(info.value)
    assert "train.valid_augment.typos: must be in [0, 1]" in str(info.value)


def test_subword_is_a_share_and_its_alpha_a_setting(tmp_path):
    cfg = config_from_dict(with_augment(tmp_path, {"subword": 0.3, "subword_alpha": 0.2, "upper": 0.1}))
    augment = cfg.data.corpora[0].augment
    assert augment.active and augment.rates() == {**AugmentConfig().rates(), "upper": 0.1, "subword": 0.3}
    assert augment.describe() == "upper 0.1, subword 0.3 (alpha 0.2)"
    assert not AugmentConfig(subword_alpha=0.5).active and AugmentConfig(subword_alpha=0.5).describe() == ""
