"""The export cache: an entry per checkpoint content, made once, whole, outside the run, chosen on val."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from seq2seq.files import file_sha256
from seq2seq.translate.placement import Placement
from tests.conftest import TrainedRun
from tests.helpers import tree_digest

pytest.importorskip("ctranslate2", reason="CTranslate2 has no wheel for this platform")
from seq2seq.ct2 import export_cache, export_choice  # noqa: E402
from seq2seq.ct2.export_cache import RECORD, CachedExport, CacheUnavailable, cache_root, cached_export  # noqa: E402
from seq2seq.ct2.export_dir import check_export_files, read_export_info  # noqa: E402
from seq2seq.ct2.runtime import CT2Translator  # noqa: E402


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache, where `cache_root()` finds it."""
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def shortlisted(run_copy: TrainedRun) -> TrainedRun:
    """A copy of the tiny run whose `decode.shortlist` lets the cache try a shortlist."""
    config = run_copy.run / "config.yaml"
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    raw["decode"]["shortlist"] = True
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return run_copy


def counting_exports(
    monkeypatch: pytest.MonkeyPatch, before: Callable[[], None] = lambda: None
) -> list[Path]:
    """The scratch folder of each entry made from now on (`choose_export`), `before` called first."""
    made: list[Path] = []
    choose = export_choice.choose_export

    def counted(run_dir: Path, checkpoint: str, scratch: Path, *args: Any) -> export_choice.Chosen:
        made.append(scratch)
        before()
        return choose(run_dir, checkpoint, scratch, *args)

    monkeypatch.setattr(export_choice, "choose_export", counted)
    return made


def test_the_root_is_s2s_cache_dir_else_xdg_cache_home_else_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("S2S_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv("S2S_CACHE_DIR")
    assert cache_root() == tmp_path / "xdg" / "s2s"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored, as the XDG spec says
    assert cache_root() == tmp_path / "home" / ".cache" / "s2s"


def test_a_first_use_makes_a_loadable_entry_outside_the_run_and_records_what_it_decided(
    shortlisted: TrainedRun, root, monkeypatch
):
    tiny_run = shortlisted
    run_files = tree_digest(tiny_run.run)
    entry = cached_export(tiny_run.run)
    assert entry.path.parent == root / "ctranslate2" and tree_digest(tiny_run.run) == run_files
    record = json.loads((entry.path / RECORD).read_text(encoding="utf-8"))
    decisions = record["decisions"]
    assert entry.decisions == decisions and decisions["val"]["lines"] == 20
    assert set(decisions["bleu"]) == {"reference", "int8", "float32", "shortlist"}  # with prepared pairs
    assert decisions["reference"].startswith("s2s's decoder")
    assert entry.compute_type == decisions["compute_type"] and entry.shortlist == bool(decisions["shortlist"])
    assert record["key"]["checkpoint_sha256"] == file_sha256(tiny_run.run / "checkpoints" / "best.pt")
    translator = CT2Translator.load(entry.path, Placement("cpu", "fp32", entry.compute_type))
    assert translator.shortlist == entry.shortlist
    made = counting_exports(monkeypatch)
    assert cached_export(tiny_run.run) == entry and made == []  # found, not made again
    assert sorted(p.name for p in (root / "ctranslate2").iterdir()) == [
        entry.path.name,
        f"{entry.path.name}.lock",
    ]


def test_the_key_follows_the_checkpoint_s_content_not_its_modification_time(run_copy: TrainedRun, root):
    best = run_copy.run / "checkpoints" / "best.pt"
    first = cached_export(run_copy.run)
    stat = best.stat()
    os.utime(best, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert cached_export(run_copy.run).path == first.path
    shutil.copyfile(run_copy.run / "checkpoints" / "step_6.pt", best)  # other weights
    other = cached_export(run_copy.run)
    assert other.path != first.path and first.path.is_dir()
    key = json.loads((other.path / RECORD).read_text(encoding="utf-8"))["key"]
    assert key["checkpoint_sha256"] == file_sha256(best)


@pytest.mark.parametrize("damage", ["model.bin", "s2s.json", RECORD, "tokenizer"])
def test_a_damaged_entry_is_made_again(tiny_run: TrainedRun, root, damage, caplog):
    entry = cached_export(tiny_run.run).path
    target = entry / damage
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    again = cached_export(tiny_run.run)
    assert again.path == entry and "is damaged" in caplog.text
    info, _ = read_export_info(entry)
    check_export_files(entry, info)
    assert json.loads((entry / RECORD).read_text(encoding="utf-8"))["decisions"] == again.decisions


def test_an_unwritable_root_raises_cache_unavailable_and_says_how_to_choose_another(
    tiny_run: TrainedRun, tmp_path, monkeypatch
):
    taken = tmp_path / "a file"
    taken.write_text("not a folder\n")
    monkeypatch.setenv("S2S_CACHE_DIR", str(taken))
    with pytest.raises(CacheUnavailable, match="S2S_CACHE_DIR"):
        cached_export(tiny_run.run)
    assert taken.read_text() == "not a folder\n"


@pytest.mark.parametrize("inside", ["checkpoints", "checkpoints/deeper", "", "export", "export/cache"])
def test_the_cache_never_writes_inside_a_folder_s2s_owns(
    run_copy: TrainedRun, tmp_path, monkeypatch, caplog, inside
):
    """Before: S2S_CACHE_DIR inside a run's checkpoints/ filled it with export files. A run directory
    and an export are refused as the cache's root, or any folder inside them; `--engine auto` says so
    in one line without -v and decodes with s2s's decoder."""
    from seq2seq.commands.engines import choose_engine
    from seq2seq.translate.options import DecodeOverrides
    from tests.helpers import run_cli

    assert run_cli("export", str(run_copy.run), str(run_copy.run.parent / "export")).exit_code == 0
    base = run_copy.run.parent / "export" if inside.startswith("export") else run_copy.run
    root = base / inside.removeprefix("export").strip("/")
    before = tree_digest(run_copy.run.parent)
    monkeypatch.setenv("S2S_CACHE_DIR", str(root))
    with pytest.raises(CacheUnavailable, match="s2s writes no cache into"):
        cached_export(run_copy.run)
    chosen = choose_engine(run_copy.run, "auto", DecodeOverrides(), Placement("cpu"))
    assert chosen.name == "s2s" and "writes no cache into" in caplog.text
    assert tree_digest(run_copy.run.parent) == before


def test_a_resumed_translation_finds_the_same_export_made_again(tiny_run: TrainedRun, root, monkeypatch):
    """Before: a file translation killed, then `s2s cache clear`, then the same command was refused
    ("begun with other settings"): the export made again had files of other modification times."""
    first = CT2Translator.load(cached_export(tiny_run.run).path, Placement("cpu"))
    shutil.rmtree(root / "ctranslate2")
    again = CT2Translator.load(cached_export(tiny_run.run).path, Placement("cpu"))
    assert again.identity() == first.identity()


def first_uses_at_once(run: Path, count: int = 2) -> list[CachedExport]:
    """`cached_export(run)` in `count` threads started together."""
    found: list[Any] = [None] * count

    def use(i: int) -> None:
        found[i] = cached_export(run)

    threads = [threading.Thread(target=use, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


def test_two_first_uses_at_once_make_it_once_and_use_one_entry(tiny_run: TrainedRun, root, monkeypatch):
    made = counting_exports(monkeypatch)
    first, second = first_uses_at_once(tiny_run.run)
    assert first == second and len(made) == 1
    assert not [p for p in (root / "ctranslate2").iterdir() if p.name.endswith(".tmp")]


def test_without_the_lock_two_first_uses_still_give_one_whole_entry(tiny_run: TrainedRun, root, monkeypatch):
    """Where the file system has no locks both make it: the second to rename uses the first's entry."""
    monkeypatch.setattr(export_cache, "lock_or_wait", lambda fd, waiting: None)
    both = threading.Barrier(2, timeout=60)
    made = counting_exports(monkeypatch, before=both.wait)  # neither starts before both are making it
    first, second = first_uses_at_once(tiny_run.run)
    assert first == second and len(made) == 2
    info, _ = read_export_info(first.path)
    check_export_files(first.path, info)
    assert [p.name for p in (root / "ctranslate2").iterdir() if not p.name.endswith(".lock")] == [
        first.path.name
    ]


def test_a_checkpoint_replaced_while_it_is_exported_is_exported_again(
    run_copy: TrainedRun, root, monkeypatch
):
    """A training saving best.pt meanwhile: the entry holds the weights its key names, the new ones."""
    best = run_copy.run / "checkpoints" / "best.pt"
    newer = run_copy.run / "checkpoints" / "step_6.pt"

    def save_once() -> None:
        if len(made) == 1:
            shutil.copyfile(newer, best.with_name("incoming"))
            os.replace(best.with_name("incoming"), best)  # as s2s saves a checkpoint

    made = counting_exports(monkeypatch, before=save_once)
    entry = cached_export(run_copy.run)
    key = json.loads((entry.path / RECORD).read_text(encoding="utf-8"))["key"]
    assert len(made) == 2 and key["checkpoint_sha256"] == file_sha256(newer)
    assert [p.name for p in (root / "ctranslate2").iterdir() if not p.name.endswith(".lock")] == [
        entry.path.name
    ]


@pytest.mark.parametrize(
    ("scores", "kept", "used"),
    [
        # int8 0.3 under the reference: float32; a shortlist 0.05 under the reference: kept
        (
            {"reference": 30.3, "int8": 30.0, "float32": 30.3, "float32-shortlist": 30.25},
            ("float32", True),
            True,
        ),
        # int8 0.15 under the reference, the shortlist 0.1 more: both kept (0.2 + 0.1 in all)
        ({"reference": 30.3, "int8": 30.15, "float32": 30.3, "int8-shortlist": 30.0}, ("int8", True), True),
        ({"reference": 30.3, "int8": 30.15, "float32": 30.3, "int8-shortlist": 29.95}, ("int8", False), True),
        # the exports agree with each other but not with s2s's decoder (a search that stops too soon):
        # int8 is within 0.2 of float32, yet not of the reference; the export is not used by auto
        (
            {"reference": 99.8, "int8": 94.9, "float32": 95.0, "float32-shortlist": 95.0},
            ("float32", False),
            False,
        ),
    ],
)
def test_int8_and_the_shortlist_are_kept_only_within_their_margins_of_s2s_s_decoder(
    shortlisted: TrainedRun, root, monkeypatch, scores, kept, used
):
    tiny_run = shortlisted
    monkeypatch.setattr(export_choice, "reference_bleu", lambda translator, sample: scores["reference"])
    monkeypatch.setattr(
        export_choice, "sample_bleu", lambda export, compute_type, sample: scores[export.name]
    )
    entry = cached_export(tiny_run.run)
    assert (entry.compute_type, entry.shortlist) == kept
    shortlist = next(v for k, v in scores.items() if k.endswith("shortlist"))
    assert entry.decisions["bleu"] == {k: v for k, v in scores.items() if "-" not in k} | {
        "shortlist": shortlist
    }
    assert (entry.not_used is None) is used
    assert read_export_info(entry.path)[0]["quantize"] == ("int8" if kept[0] == "int8" else None)


def test_auto_leaves_an_export_that_does_not_reproduce_the_run_to_s2s_s_decoder(
    tiny_run: TrainedRun, root, monkeypatch, caplog
):
    from seq2seq.commands.engines import choose_engine
    from seq2seq.translate.options import DecodeOverrides

    monkeypatch.setattr(export_choice, "reference_bleu", lambda translator, sample: 99.8)
    monkeypatch.setattr(export_choice, "sample_bleu", lambda export, compute_type, sample: 95.0)
    chosen = choose_engine(tiny_run.run, "auto", DecodeOverrides(), Placement("cpu"))
    assert chosen.name == "s2s" and "95.00 in float32" in chosen.reason and "99.80" in chosen.reason
    assert "decoding with s2s's decoder" in caplog.text  # said without -v
    forced = choose_engine(tiny_run.run, "ctranslate2", DecodeOverrides(), Placement("cpu"))
    assert forced.name == "ctranslate2" and "as asked" in caplog.text


@pytest.mark.parametrize(("exported", "warned"), [(99.7, False), (95.0, True)])
def test_s2s_export_warns_of_an_export_that_does_not_reproduce_the_run(
    tiny_run: TrainedRun, tmp_path, monkeypatch, exported, warned
):
    from tests.helpers import run_cli

    monkeypatch.setattr(export_choice, "reference_bleu", lambda weights, sample: 99.8)
    monkeypatch.setattr(export_choice, "sample_bleu", lambda export, compute_type, sample: exported)
    result = run_cli("export", str(tiny_run.run), str(tmp_path / "export"))
    assert result.exit_code == 0, result.output
    assert ("does not reproduce this run's translations" in result.output) is warned
    assert (tmp_path / "export" / "model.bin").is_file()  # exported all the same


def test_without_decode_shortlist_the_cache_tries_no_shortlist(tiny_run: TrainedRun, root):
    """A shortlist is the union of a batch's candidates: a line's translation would depend on the
    other lines of its call. Off unless the run's config asks for it."""
    entry = cached_export(tiny_run.run)
    assert not entry.shortlist and entry.decisions["shortlist_tried"].startswith(
        "not tried: decode.shortlist"
    )
    assert set(entry.decisions["bleu"]) == {"reference", "int8", "float32"}


def test_a_run_without_its_val_files_or_prepared_pairs_gets_int8_without_a_shortlist(
    shortlisted: TrainedRun, root
):
    run_copy = shortlisted
    shutil.rmtree(run_copy.run / "prepared")
    entry = cached_export(run_copy.run)
    assert entry.decisions["shortlist_tried"].startswith("not tried") and not entry.shortlist
    config = run_copy.run / "config.yaml"
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    raw["data"]["valid_src"] = str(run_copy.run / "gone.src")
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    entry = cached_export(run_copy.run)
    assert entry.decisions["val"].startswith("not checked: no val")
    assert (entry.compute_type, entry.shortlist) == ("int8", False)


def test_a_later_use_reads_each_file_of_the_entry_once(tiny_run: TrainedRun, root, monkeypatch):
    """The cache checks an entry's files before it is used; loading it does not read them again."""
    from seq2seq.commands.engines import choose_engine
    from seq2seq.ct2 import export_dir
    from seq2seq.translate.options import DecodeOverrides

    entry = cached_export(tiny_run.run).path
    read: list[Path] = []
    monkeypatch.setattr(export_dir, "file_sha256", lambda path: read.append(path) or file_sha256(path))
    chosen = choose_engine(tiny_run.run, "auto", DecodeOverrides(), Placement("cpu"))
    assert chosen.name == "ctranslate2"
    assert sorted(read) == sorted({entry / name for name in read_export_info(entry)[0]["files"]})
