import pytest
import yaml

from seq2seq.config import (
    Config,
    apply_override,
    check_data_files,
    config_from_dict,
    config_to_dict,
    load_config,
    save_config,
)
from seq2seq.errors import ConfigError
from tests.conftest import ROOT, tiny_config_dict


def errors_of(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    return str(info.value)


def test_unknown_key_names_dotted_path_and_suggestion(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["train"]["lrr"] = 0.1
    message = errors_of(raw)
    assert "train.lrr" in message and "did you mean train.lr?" in message


def test_unknown_section_is_reported(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["trian"] = {}
    assert "trian: unknown key (did you mean train?)" in errors_of(raw)


def test_wrong_type_names_key(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["model"]["d_model"] = "big"
    assert "model.d_model: expected int" in errors_of(raw)


def test_bool_is_not_an_int(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["train"]["max_steps"] = True
    assert "train.max_steps: expected int" in errors_of(raw)


def test_choices_are_listed(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["model"]["norm"] = "middle"
    assert "model.norm: 'middle' is not one of pre, post" in errors_of(raw)


def test_impossible_values_are_all_reported_at_once(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["model"]["heads"] = 3
    raw["train"]["warmup_steps"] = -1
    message = errors_of(raw)
    assert "model.d_model" in message and "divisible" in message
    assert "train.warmup_steps" in message


def test_missing_data_file_names_key(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["data"]["valid_tgt"] = str(tmp_path / "nope.txt")
    with pytest.raises(ConfigError, match=r"data.valid_tgt: file not found"):
        check_data_files(config_from_dict(raw))


def test_override_coerces_types(tmp_path):
    raw = tiny_config_dict(tmp_path)
    apply_override(raw, "train.lr=3e-4")
    apply_override(raw, "train.max_steps=7")
    apply_override(raw, "model.norm=post")
    apply_override(raw, "tokenizer.joint=false")
    apply_override(raw, "model.share_all_embeddings=false")
    cfg = config_from_dict(raw)
    assert cfg.train.lr == pytest.approx(3e-4) and isinstance(cfg.train.lr, float)
    assert cfg.train.max_steps == 7 and cfg.model.norm == "post" and cfg.tokenizer.joint is False


def test_int_accepted_for_float(tmp_path):
    raw = tiny_config_dict(tmp_path)
    raw["train"]["lr"] = 1
    assert config_from_dict(raw).train.lr == 1.0


def test_override_of_unknown_key_fails(tmp_path):
    raw = tiny_config_dict(tmp_path)
    apply_override(raw, "train.learning_rate=1")
    assert "train.learning_rate" in errors_of(raw)


def test_round_trip_through_yaml(tmp_path):
    cfg = config_from_dict(tiny_config_dict(tmp_path))
    path = tmp_path / "saved.yaml"
    save_config(cfg, path)
    assert load_config(path) == cfg
    assert config_from_dict(config_to_dict(cfg)) == cfg


def test_config_is_frozen(tmp_path):
    cfg = config_from_dict(tiny_config_dict(tmp_path))
    with pytest.raises(AttributeError):
        cfg.train.lr = 1.0  # type: ignore[misc]


def test_shipped_configs_load():
    root = ROOT
    for path in sorted((root / "configs").glob("*.yaml")):
        assert isinstance(load_config(path), Config), path


def test_invalid_yaml_is_a_config_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("train: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_yaml_top_level_must_be_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump([1, 2]), encoding="utf-8")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(path)
