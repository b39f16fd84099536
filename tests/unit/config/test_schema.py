"""The schema is the dataclasses: every field is a YAML key, every section refuses keys it lacks."""

import copy
import dataclasses
import typing

import pytest
import yaml

from seq2seq.config import (
    Config,
    DataConfig,
    DecodeConfig,
    TokenizerConfig,
    apply_override,
    config_from_dict,
    config_to_dict,
)
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict


def leaf_keys(cls: type, prefix: str = "") -> list[str]:
    """The dotted key of every non-section field of the dataclass `cls`, read from the dataclass."""
    hints = typing.get_type_hints(cls)
    keys = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            keys.extend(leaf_keys(kind, f"{prefix}{f.name}."))
        else:
            keys.append(prefix + f.name)
    return keys


def section_names() -> list[str]:
    hints = typing.get_type_hints(Config)
    return [f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(hints[f.name])]


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> dict:
    return tiny_config_dict(tmp_path_factory.mktemp("schema"))


def errors_of(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    head, *errors = str(info.value).split("\n  ")
    assert head == "invalid config:"
    return errors


def value_at(tree: dict, dotted: str) -> object:
    for name in dotted.split("."):
        tree = tree[name]
    return tree


def test_the_schema_is_not_empty():
    assert len(section_names()) == 5 and len(leaf_keys(Config)) > 60


@pytest.mark.parametrize("key", leaf_keys(Config))
def test_every_field_is_reachable_by_its_dotted_key(raw, key):
    expected = config_from_dict(copy.deepcopy(raw))
    same = copy.deepcopy(raw)
    apply_override(same, f"{key}={yaml.safe_dump(value_at(config_to_dict(expected), key)).strip()}")
    assert config_from_dict(same) == expected
    wrong = copy.deepcopy(raw)
    apply_override(wrong, f"{key}={{not: a value}}")  # a mapping is no field's type
    assert [e for e in errors_of(wrong) if e.startswith(f"{key}: ")], key


@pytest.mark.parametrize("section", ["", *(f"{name}." for name in section_names())])
def test_an_unknown_key_in_each_section_is_refused_naming_it(raw, section):
    broken = copy.deepcopy(raw)
    apply_override(broken, f"{section}no_such_key=1")
    assert any(e.startswith(f"{section}no_such_key: unknown key") for e in errors_of(broken))


def test_value_problems_are_reported_section_by_section(raw):
    broken = copy.deepcopy(raw)
    for item in [
        "decode.beam=0",
        "train.lr=0",
        "model.heads=3",
        "tokenizer.max_sentences=0",
        "data.max_len_ratio=-1",
        "run_dir=",
    ]:
        apply_override(broken, item)
    assert [e.split(":")[0] for e in errors_of(broken)] == [
        "run_dir",
        "data.max_len_ratio",
        "tokenizer.max_sentences",  # with its section (it came after the train rules before)
        "model.d_model",
        "train.lr",
        "decode.beam",
    ]


def test_a_rule_reading_two_sections_sits_with_the_key_it_names(raw):
    broken = copy.deepcopy(raw)
    apply_override(broken, "tokenizer.joint=false")  # share_all_embeddings stays true
    apply_override(broken, "decode.min_len=63")  # model.max_positions is 64
    assert errors_of(broken) == [
        "model.share_all_embeddings: needs tokenizer.joint: true (separate vocabularies cannot share)",
        "decode.min_len: must be >= 0 and < model.max_positions - 1",
    ]


def test_each_section_checks_its_own_fields_alone():
    assert DataConfig().problems() == [
        "data.train_src: required (or data.corpora)",
        "data.train_tgt: required (or data.corpora)",
        "data.valid_src: required",
        "data.valid_tgt: required",
    ]
    assert TokenizerConfig().problems() == []
    assert DecodeConfig().problems(max_positions=2) == [
        "decode.min_len: must be >= 0 and < model.max_positions - 1"
    ]
