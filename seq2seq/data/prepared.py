"""The prepared corpus: training pairs tokenized once into flat arrays that every rank memory-maps.

A prepared directory holds a marker and one directory per training corpus, named after it:

    .s2s-prepared       marker (the directory is s2s's) and lock
    NAME/manifest.json  what the arrays were made from, their sizes and checksums, corpus statistics
    NAME/train.src.ids  source ids without bos/eos (a tag first): uint16 (vocabulary <= 65536) or uint32
    NAME/train.src.offsets  int64, N + 1 entries: pair i's source is ids[offsets[i]:offsets[i + 1]]
    NAME/train.tgt.ids, NAME/train.tgt.offsets
    NAME/train.costs    int32, N: each pair's padded length in a batch (what bucketing sorts by)
    NAME/dropped.json   a few of the pairs each cleaning rule dropped (`s2s prepare --sample`)
    NAME/reasons.u8     uint8, one per pair read: why it was dropped (`cleaning.CODE`), 0 if kept
    NAME/train.align.*  with train.guided_alignment: each pair's alignment (`seq2seq.data.alignments`)

Each corpus is prepared on its own, so a corpus's weight can change, or a corpus be added, without
tokenizing the others again; training reads them as one corpus (`JoinedCorpus`).

It is made by worker processes that stream the text in chunks (`seq2seq.data.encode`) and is reused
while the text files, the tokenizer and the length filter stay the same (`seq2seq.data.manifest`
decides). The manifest is removed first and written last, so an interrupted prepare leaves either no
manifest or one that describes complete arrays; their sizes and checksums are checked before use.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seq2seq.config import Config
from seq2seq.config.data import CorpusConfig
from seq2seq.data.alignments import ensure_alignments, load_links
from seq2seq.data.corpora import count_pairs
from seq2seq.data.encode import REASONS_FILE, Rules, default_workers, encode_corpus
from seq2seq.data.manifest import (
    ARRAYS,
    DROPPED,
    MANIFEST,
    check_made_from,
    corpus_made_from,
    dropped_summary,
    length_filter,
    new_manifest,
    read_manifest,
    stale_reason,
)
from seq2seq.data.mapped import MappedCorpus, map_file
from seq2seq.data.mixing import Mixture
from seq2seq.data.parallel import JoinedCorpus, ParallelData
from seq2seq.data.targets import TARGETS, Targets
from seq2seq.data.token_arrays import TokenArrays
from seq2seq.data.tokenizer import Tokenizer, load_tokenizers, tokenizer_checksums
from seq2seq.errors import DataError
from seq2seq.files import write_text
from seq2seq.locks import lock_or_wait
from seq2seq.run.layout import RunDir

log = logging.getLogger(__name__)

MARKER = ".s2s-prepared"


def prepared_corpus_dir(cfg: Config) -> Path:
    """Where this config's prepared corpus lives: `data.prepared_dir`, or RUN_DIR/prepared."""
    return Path(cfg.data.prepared_dir) if cfg.data.prepared_dir else Path(cfg.run_dir) / "prepared"


def ensure_prepared_corpus(
    cfg: Config,
    tokenizer_dir: Path,
    data_sums: dict[str, str],
    tokenizer_sums: dict[str, str],
    workers: int = 0,
) -> dict[str, dict[str, Any]]:
    """Reuse each corpus's prepared arrays if they match the config, else (re)make them and say why.
    Rank 0 only.

    Returns the manifest of each corpus, by name. `workers` = 0 uses one encoding process per CPU
    core (none for a small corpus, which encodes faster than worker processes start).
    """
    top = prepared_corpus_dir(cfg)
    tokenizers = load_tokenizers(tokenizer_dir, cfg.tokenizer.joint)
    manifests = {}
    with _locked(top):
        _drop_single_layout(top)
        for corpus, keys in zip(cfg.data.training_corpora(), cfg.data.corpus_keys(), strict=True):
            directory = top / corpus.name
            wanted = corpus_made_from(cfg, corpus, keys, data_sums, tokenizer_sums, tokenizers.src)
            reason = stale_reason(directory, wanted) or inconsistency(directory, read_manifest(directory))
            if reason is None:
                manifest = read_manifest(directory)
                log.info("reusing prepared corpus %s (%s pairs)", corpus.name, f"{manifest['pairs']:,}")
            else:
                log.info("preparing corpus %s in %s: %s", corpus.name, directory, reason)
                directory.mkdir(exist_ok=True)
                manifest = _encode_into(directory, cfg, corpus, wanted, tokenizer_dir, workers)
            if cfg.train.guided_alignment.active:  # after the pairs: their words, as the model reads them
                pairs = load_prepared_part(directory)
                manifest = ensure_alignments(directory, corpus, manifest, pairs, tokenizers)
            manifests[corpus.name] = manifest
    for name, manifest in manifests.items():
        for side, named in (("src", "source"), ("tgt", "target")):
            if share := manifest["stats"][side]["unk_share"]:
                log.warning(
                    "corpus %s %s: %.3f%% of the pieces are <unk>: characters outside the vocabulary; "
                    "tokenizer.byte_fallback: true represents them as bytes",
                    name,
                    named,
                    100 * share,
                )
        if manifest["pairs"] == 0:
            raise DataError(
                f"corpus {name}: every training pair was dropped ({dropped_summary(manifest)}); check "
                "data.max_len, data.max_len_ratio and its clean rules"
            )
    return manifests


def load_trained_corpora(
    cfg: Config,
    top: Path,
    data_sums: dict[str, str],
    tokenizer_sums: dict[str, str],
    tokenizer: Tokenizer,
    arrays: bool = True,
) -> list[MappedCorpus]:
    """The prepared corpora in `top` a run of `cfg` trained on, checked as training checks them: made
    from the text and tokenizer the run records (`data_sums`, `tokenizer_sums`: its inputs.json's) and
    its rules, with `arrays` their arrays as their manifests sum them (`check_made_from`)."""
    parts = []
    for corpus, keys in zip(cfg.data.training_corpora(), cfg.data.corpus_keys(), strict=True):
        wanted = corpus_made_from(cfg, corpus, keys, data_sums, tokenizer_sums, tokenizer)
        check_made_from(top / corpus.name, wanted, arrays)
        parts.append(load_prepared_part(top / corpus.name))
    return parts


def run_trained_corpora(
    run_dir: Path, cfg: Config, tokenizer: Tokenizer, arrays: bool = True
) -> list[MappedCorpus]:
    """The prepared corpora the run in `run_dir` (its saved config `cfg`, its source `tokenizer`)
    trained on, checked (`load_trained_corpora`; without `arrays`, not their arrays' checksums): in
    `data.prepared_dir` when the config names one, else in the run directory's own prepared/. Not
    `prepared_corpus_dir(cfg)`: the saved config's run_dir is where the run was trained, and a run
    moved or copied holds its own."""
    run = RunDir(run_dir)
    top = Path(cfg.data.prepared_dir) if cfg.data.prepared_dir else run.path / "prepared"
    tokenizer_sums = tokenizer_checksums(run.tokenizer_dir, cfg.tokenizer.joint)
    data_sums = run.read_inputs().get("data", {})
    return load_trained_corpora(cfg, top, data_sums, tokenizer_sums, tokenizer, arrays)


def _drop_single_layout(top: Path) -> None:
    """Remove the arrays an older s2s kept at the top of the directory (one corpus, format 2)."""
    if (top / MANIFEST).is_file():
        log.info("removing the prepared corpus of an older s2s in %s", top)
        (top / MANIFEST).unlink()
        for name in ARRAYS:
            (top / f"train.{name}").unlink(missing_ok=True)


def load_prepared(
    top: Path, corpora: Sequence[CorpusConfig], links: bool = False, targets: Targets | None = None
) -> ParallelData | JoinedCorpus:
    """The prepared training corpora as one corpus, pairs numbered corpus after corpus (`links`: with them).

    One corpus is its `MappedCorpus` itself (what a run with one corpus always trained on). `targets`
    are the training run's (its tokenizers': a right-to-left model's, say), of the corpora's task;
    None: those the manifests name.
    """
    parts = [load_prepared_part(top / corpus.name, links, targets) for corpus in corpora]
    return parts[0] if len(parts) == 1 else JoinedCorpus.of(parts)


def read_manifests(top: Path, corpora: Sequence[CorpusConfig]) -> dict[str, dict[str, Any]]:
    """The manifest of each prepared corpus, by name."""
    return {corpus.name: read_manifest(top / corpus.name) for corpus in corpora}


def corpus_mixture(
    manifests: dict[str, dict[str, Any]], corpora: Sequence[CorpusConfig], temperature: float = 1.0
) -> Mixture:
    """What an epoch draws from the prepared corpora (`read_manifests`): each one's kept pairs and
    weight, grouped by direction (a multilingual run's) with `temperature` (data.temperature) across;
    a `DataError` when the epoch is too large to draw or leaves a corpus out (`Mixture.check`)."""
    directions = [c.direction for c in corpora]
    order = {direction: i for i, direction in enumerate(dict.fromkeys(directions))}
    mixture = Mixture(
        tuple(int(manifests[c.name]["pairs"]) for c in corpora),
        tuple(float(c.weight) for c in corpora),
        tuple(order[d] for d in directions),
        temperature,
        tuple(c.name for c in corpora),
    )
    mixture.check()
    return mixture


def load_prepared_part(directory: Path, links: bool = False, targets: Targets | None = None) -> MappedCorpus:
    """Memory-map one prepared corpus (the OS page cache holds one copy for every process); with
    `links`, its alignments too.

    Checks what costs no reading (`inconsistency`); `ensure_prepared_corpus` also compares checksums
    before a run starts, and makes the corpus again where either finds a fault, so the advice works.
    """
    manifest = read_manifest(directory)
    if why := inconsistency(directory, manifest):
        raise DataError(
            f"the prepared corpus in {directory} is unusable ({why}): run `s2s prepare CONFIG` again"
        )
    made = TARGETS[manifest["made_from"]["task"]]  # a run's targets lay out those of its task
    assert targets is None or targets.task == made.task, "the run's tokenizers made the corpus"
    arrays, maps = {}, []
    for name in ARRAYS:
        path, dtype = directory / f"train.{name}", np.dtype(manifest["arrays"][name]["dtype"])
        if path.stat().st_size:
            maps.append(map_file(path))
            arrays[name] = np.frombuffer(maps[-1], dtype=dtype)
        else:  # an empty file cannot be mapped
            arrays[name] = np.zeros(0, dtype)
    pair_links = load_links(directory, manifest, maps) if links else None  # maps its arrays too
    return MappedCorpus(
        TokenArrays(arrays["src.ids"], arrays["src.offsets"]),
        TokenArrays(arrays["tgt.ids"], arrays["tgt.offsets"]),
        arrays["costs"],
        targets or made,
        pair_links,
        tuple(maps),
    )


def inconsistency(directory: Path, manifest: dict[str, Any]) -> str | None:
    """What keeps the arrays on disk from making the corpus the manifest describes (of a task this
    s2s knows), read from their sizes and the offsets' ends; None when nothing does.

    Each array has the size the manifest gives and whole elements of its dtype; the costs and each
    side's offsets count its pairs (N and N + 1); the offsets start at 0 and end at the ids' count.
    """
    if manifest["made_from"]["task"] not in TARGETS:
        return f"its task {manifest['made_from']['task']!r} is none this s2s knows"
    counts = {}
    for name in ARRAYS:
        info, path = manifest["arrays"][name], directory / f"train.{name}"
        size = path.stat().st_size if path.is_file() else None
        if size != info["bytes"]:
            return (
                f"{path.name} is missing, truncated or changed ({size} bytes, the manifest says "
                f"{info['bytes']})"
            )
        try:
            itemsize = np.dtype(info["dtype"]).itemsize
        except TypeError:
            return f"{path.name} has an unknown dtype {info['dtype']!r}"
        if size % itemsize:
            return f"{path.name} is not a whole number of {info['dtype']} values"
        counts[name] = size // itemsize
    pairs = manifest["pairs"]
    if not isinstance(pairs, int) or pairs < 0:
        return f"its pair count {pairs!r} is not a count"
    if counts["costs"] != pairs:
        return f"{pairs} pairs, but train.costs holds {counts['costs']}"
    for side in ("src", "tgt"):
        if counts[f"{side}.offsets"] != pairs + 1:
            return f"{pairs} pairs, but train.{side}.offsets holds {counts[f'{side}.offsets']} offsets"
        dtype = np.dtype(manifest["arrays"][f"{side}.offsets"]["dtype"])
        ends = _ends(directory / f"train.{side}.offsets", dtype)
        if ends != (0, counts[f"{side}.ids"]):
            return f"train.{side}.offsets runs from {ends[0]} to {ends[1]}, not 0 to {counts[f'{side}.ids']}"
    return None


def _ends(path: Path, dtype: np.dtype) -> tuple[int, int]:
    """The first and the last value of a non-empty raw array file."""
    with path.open("rb") as f:
        first = np.frombuffer(f.read(dtype.itemsize), dtype)[0]
        f.seek(-dtype.itemsize, os.SEEK_END)
        last = np.frombuffer(f.read(dtype.itemsize), dtype)[0]
    return int(first), int(last)


# ---- making it ----------------------------------------------------------------------------------


def _encode_into(
    directory: Path,
    cfg: Config,
    corpus: CorpusConfig,
    wanted: dict[str, Any],
    tokenizer_dir: Path,
    workers: int,
) -> dict[str, Any]:
    """Encode into a temporary directory, then swap the arrays in and write the manifest last."""
    for stale in directory.glob(".tmp-*"):  # left by a prepare that was killed (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory))
    languages = cfg.data.corpus_languages(corpus)
    rules = Rules(length_filter(cfg), corpus.clean, languages, tuple(wanted["prefix"]))
    try:
        pairs = count_pairs(corpus) if corpus.clean.dedup else 0  # the duplicate table's size
        encoded = encode_corpus(
            corpus,
            pairs,
            tokenizer_dir,
            cfg.tokenizer.joint,
            rules,
            scratch,
            workers or default_workers(corpus),
        )
        manifest = new_manifest(corpus, wanted, encoded)
        (directory / MANIFEST).unlink(missing_ok=True)
        for name in ARRAYS:
            os.replace(scratch / f"train.{name}", directory / f"train.{name}")
        os.replace(scratch / REASONS_FILE, directory / REASONS_FILE)
        write_text(directory / DROPPED, json.dumps(encoded.dropped, ensure_ascii=False) + "\n")
        write_text(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.info("prepared %s pairs of corpus %s in %s", f"{manifest['pairs']:,}", corpus.name, directory)
    return manifest


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold the prepared directory (one prepare at a time; runs sharing it wait for each other).

    Refuses a non-empty directory that s2s did not make: preparing writes files there.
    """
    marker = directory / MARKER
    if directory.is_dir() and any(directory.iterdir()) and not marker.is_file():
        raise DataError(
            f"data.prepared_dir {directory} is not empty and was not made by s2s; choose another directory"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(marker, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise DataError(f"cannot write the prepared corpus to {directory}: {e.strerror}") from None
    try:
        lock_or_wait(fd, lambda: log.info("waiting for another s2s process preparing %s", directory))
        yield
    finally:
        os.close(fd)
