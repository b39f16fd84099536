"""A prepared corpus's manifest is read back with its shape checked: any damage to it is a `DataError`
naming the file and saying what to do (for training, a corpus that is made again), never a KeyError."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seq2seq.data.manifest import FORMAT, MANIFEST, read_manifest, stale_reason
from seq2seq.errors import DataError

ADVICE = "run `s2s prepare CONFIG` again"


@pytest.fixture
def prepared(tiny_run, tmp_path) -> Path:
    """A private copy of the tiny run's prepared corpus."""
    return Path(shutil.copytree(tiny_run.run / "prepared" / "train", tmp_path / "prepared"))


def paths(value: Any, where: tuple = ()) -> Iterator[tuple]:
    """The key path of every value inside `value` (objects and lists, all the way down)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in items:
        yield (*where, key)
        yield from paths(item, (*where, key))


def damaged(manifest: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(what, the manifest so damaged): every value removed, or replaced by one of the wrong kind."""
    for path in paths(manifest):
        *parents, last = path
        old = manifest
        for key in path:
            old = old[key]
        if isinstance(old, bool):
            wrong = [[], "x", None, 1]
        else:
            wrong = [[], 1, None] if isinstance(old, str) else [[], "x", None, True]
        changes: list[Any] = wrong if isinstance(old, dict) else [*wrong, {}]
        for value in [*changes, REMOVED] if isinstance(last, str) else changes:
            copied = copy.deepcopy(manifest)
            parent = copied
            for key in parents:
                parent = parent[key]
            if value is REMOVED:
                del parent[last]
            else:
                parent[last] = value
            yield f"{'.'.join(map(str, path))} {'removed' if value is REMOVED else f'= {value!r}'}", copied


REMOVED = object()


# damages that leave a manifest of the right shape: maps of any keys (checksums by file) and lists
EMPTIED = {
    "made_from.text = {}",
    "made_from.tokenizer = {}",
    "made_from.prefix = []",
    "made_from.clean.languages = []",
    "sources = {}",
    "stats.src.histogram = []",
    "stats.tgt.histogram = []",
}


def still_shaped(what: str) -> bool:
    return (
        what in EMPTIED
        or what.startswith(("made_from.text.", "made_from.tokenizer.", "sources."))
        and "removed" in what
    )


def test_every_damage_to_the_manifest_is_an_error_naming_it_and_makes_the_corpus_stale(prepared):
    path = prepared / MANIFEST
    good = json.loads(path.read_text())
    wanted = good["made_from"]
    assert read_manifest(prepared) == good and stale_reason(prepared, wanted) is None
    cases = list(damaged(good))
    assert len(cases) > 100
    for what, manifest in cases:
        path.write_text(json.dumps(manifest))
        reason = stale_reason(prepared, wanted)  # never raises
        if still_shaped(what):
            assert read_manifest(prepared) == manifest, what
            continue
        with pytest.raises(DataError) as info:
            read_manifest(prepared)
        assert str(info.value).startswith(f"{path} ") and str(info.value).endswith(ADVICE), what
        assert reason is not None, what  # so `s2s prepare` makes it again


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[]", b"null", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b" " * (2 << 20) + b"{}"],
    ids=["empty", "cut", "list", "null", "not utf-8", "deep", "huge"],
)
def test_a_manifest_that_is_not_one_is_an_error_naming_it(prepared, raw):
    path = prepared / MANIFEST
    wanted = json.loads(path.read_text())["made_from"]
    path.write_bytes(raw)
    with pytest.raises(DataError, match=f"^{path} .*{ADVICE.replace('`', '.')}$"):
        read_manifest(prepared)
    assert stale_reason(prepared, wanted) is not None


def test_a_manifest_of_another_format_is_stale_for_that_reason(prepared):
    path = prepared / MANIFEST
    wanted = json.loads(path.read_text())["made_from"]
    path.write_text(json.dumps({"made_from": {"format": FORMAT - 1}, "arrays": {}}))  # an older layout
    assert "made by another version of s2s" in stale_reason(prepared, wanted)
    with pytest.raises(DataError, match=f"made by another version of s2s: format {FORMAT - 1}, now {FORMAT}"):
        read_manifest(prepared)
