"""The config reader is bounded: a document that is too large, nests too deep or whose aliases expand
without bound is a `ConfigError` after bounded work, wherever it sits (a file, a known key, an unknown
one, an override); and no error message grows with the value it shows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from seq2seq.config import load_config
from seq2seq.config.loading import MAX_BYTES, MAX_DEPTH, MAX_VALUES
from seq2seq.errors import ConfigError
from tests.conftest import tiny_config_dict


@contextmanager
def within(seconds: float) -> Iterator[None]:
    start = time.monotonic()
    yield
    assert time.monotonic() - start < seconds


def anchors(levels: int, width: int = 9, indent: str = "  ") -> str:
    """YAML mapping lines `lN: &lN [*lN-1, ...]`: level N expands to width ** (N + 1) values."""
    lines = []
    for i in range(levels):
        items = ", ".join([f"*l{i - 1}" if i else "x"] * width)
        lines.append(f"{indent}l{i}: &l{i} [{items}]\n")
    return "".join(lines)


def config_text(tmp_path: Path, model_extra: str = "", top_extra: str = "") -> str:
    """The tiny config as YAML, with raw YAML lines added to the model section and the top level."""
    raw = tiny_config_dict(tmp_path)
    model = yaml.safe_dump({"model": raw.pop("model")}, sort_keys=False)
    return top_extra + yaml.safe_dump(raw, sort_keys=False) + model + model_extra


def refusal(tmp_path: Path, text: str, overrides: list[str] | None = None) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with within(5), pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    assert len(str(info.value)) < 2000  # no message grows with what it shows
    return str(info.value)


DEFS = "defs:\n" + anchors(5)  # l4: 9 ** 5 values, and all of defs under the bound
NINE = "[" + ", ".join(["*l4"] * 9) + "]"  # 9 ** 6 values: over it
PLACES = {
    "a known key": lambda tmp: config_text(tmp, f"  heads: {NINE}\n", DEFS),
    "an unknown key": lambda tmp: config_text(tmp, f"  extra: {NINE}\n", DEFS),
    "a list of files": lambda tmp: config_text(tmp, top_extra=DEFS).replace(
        "train_src: ", "train_src: *l4 #", 1
    ),
    "a merge key": lambda tmp: config_text(tmp, f"  <<: {{heads: {NINE}}}\n", DEFS),
}


@pytest.mark.parametrize("place", PLACES.values(), ids=PLACES.keys())
def test_aliases_that_expand_without_bound_are_refused_wherever_they_sit(tmp_path, place):
    text = place(tmp_path)
    message = refusal(tmp_path, text)
    assert f"expand to more than {MAX_VALUES:,} values" in message
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "*l4" in row)  # not in defs: at the place
    assert f"line {line}:" in message


def test_an_alias_bomb_in_an_override_is_refused(tmp_path):
    bomb = (
        "{"
        + ", ".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "x"] * 9) + "]" for i in range(9))
        + "}"
    )
    message = refusal(tmp_path, config_text(tmp_path), [f"model.heads={bomb}"])
    assert "override" in message and "expand to more than" in message


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    assert "refers to a value that contains it" in refusal(
        tmp_path, config_text(tmp_path, "  heads: &a [*a]\n")
    )


def test_aliases_under_the_bound_load_and_their_bad_value_is_shown_bounded(tmp_path):
    """9 ** 5 values behind one key: read (it is under the bound), refused as a list, shown cut short."""
    text = config_text(tmp_path, "  heads: [" + ", ".join(["*l3"] * 9) + "]\n", "defs:\n" + anchors(4))
    assert "model.heads: expected int, got list [[[" in refusal(tmp_path, text)


def test_aliases_that_repeat_a_value_are_still_fine(tmp_path):
    text = config_text(tmp_path).replace("train_src: ", "train_src: &train ", 1)
    text = text.replace("valid_src: ", "valid_src: *train #", 1)
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    cfg = load_config(path)
    assert cfg.data.train_src == (cfg.data.valid_src,)


NESTED = {
    "flow lists": lambda depth: "[" * depth + "]" * depth,
    "flow mappings": lambda depth: "{a: " * depth + "1" + "}" * depth,
    "block lists": lambda depth: "\n" + "".join("  " * (i + 2) + "-\n" for i in range(depth)),
}


@pytest.mark.parametrize("nested", NESTED.values(), ids=NESTED.keys())
@pytest.mark.parametrize("depth", [MAX_DEPTH, 20_000])
def test_nesting_deeper_than_the_bound_is_refused_as_it_is_read(tmp_path, nested, depth):
    if nested is NESTED["block lists"] and depth > 400:
        depth = 400  # the indentation alone would be over the size bound
    message = refusal(tmp_path, config_text(tmp_path, f"  heads: {nested(depth)}\n"))
    assert f"nested more than {MAX_DEPTH} levels deep" in message
    message = refusal(tmp_path, config_text(tmp_path), [f"model.heads={nested(depth).strip()}"])
    assert "override" in message and f"nested more than {MAX_DEPTH} levels deep" in message


def test_nesting_within_the_bound_is_a_plain_type_error(tmp_path):
    message = refusal(tmp_path, config_text(tmp_path, f"  heads: {NESTED['flow lists'](MAX_DEPTH - 4)}\n"))
    assert "model.heads: expected int, got list" in message


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path):
    text = config_text(tmp_path) + "# " + "x" * MAX_BYTES + "\n"
    assert f"is over {MAX_BYTES // 1024} KiB" in refusal(tmp_path, text)


@pytest.mark.parametrize(
    "value",
    ["x" * 20_000, list(range(2_000)), {"k" * 2_000: ["v"] * 2_000}],
    ids=["string", "list", "mapping"],
)
def test_every_error_message_shows_a_value_cut_short(tmp_path, value):
    raw = tiny_config_dict(tmp_path)
    for key in ("heads", "norm", "dropout"):  # an int, a choice, a float
        raw["model"][key] = value
    raw["data"]["train_src"] = [value]
    raw["model"]["k" * 5000] = 1  # an unknown key, named cut short
    assert "model.heads" in refusal(tmp_path, yaml.safe_dump(raw))


@pytest.mark.parametrize("section", ["train", "model", "decode", "tokenizer", "data"])
@pytest.mark.parametrize("override", [[], ["train.max_steps=3"]])
def test_a_section_written_empty_is_its_defaults_or_names_its_required_keys(tmp_path, section, override):
    """`train:` with nothing after it is YAML null: before, an AttributeError traceback (or, with an
    override into it, "train is not a section"); now the section's defaults, each required key named."""
    raw = tiny_config_dict(tmp_path)
    raw[section] = None
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    if section == "data":
        with pytest.raises(ConfigError, match="data.train_src: required"):
            load_config(path, override)
        return
    cfg = load_config(path, [*override, "train.max_steps=3"] if section == "train" else override)
    assert getattr(cfg, section) is not None
