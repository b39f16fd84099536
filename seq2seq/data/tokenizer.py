"""SentencePiece tokenizers: train on the corpus, store in the run directory, encode and decode.

Special ids are fixed for every model s2s trains: pad=0, unk=1, bos=2, eos=3 (`seq2seq.special`).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import cast

import numpy as np
import sentencepiece as spm

from seq2seq.config import TokenizerConfig
from seq2seq.config.data import CorpusConfig, language_tokens
from seq2seq.data.labels import LABELS_FILE, Labels, build_labels, check_known_labels
from seq2seq.data.targets import RIGHT_TO_LEFT, TRANSLATION, LabelTargets, Targets
from seq2seq.data.tokenizer_sample import Side, sample_lines
from seq2seq.data.workers import spawned_pool
from seq2seq.errors import DataError, RunDirError
from seq2seq.files import file_sha256
from seq2seq.special import BOS, CONTROL_PIECES, EOS, PAD, UNK

log = logging.getLogger(__name__)


class Tokenizer:
    """One SentencePiece model: text <-> ids, without bos/eos (the data pipeline adds those)."""

    def __init__(self, model_file: Path) -> None:
        self.path = Path(model_file)
        if not self.path.is_file():
            raise RunDirError(
                f"tokenizer not found: {self.path}; a run can only be used with the tokenizer it was "
                "trained with: restore it from a backup, or train a new run"
            )
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(self.path))
        except (OSError, RuntimeError):
            raise RunDirError(f"{self.path} is not a readable SentencePiece model (corrupted?)") from None
        self._word_starts: np.ndarray | None = None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (PAD, UNK, BOS, EOS):
            raise RunDirError(
                f"{self.path} was not made by s2s (its special ids are not 0-3: pad unk bos eos)"
            )

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, lines: Sequence[str], threads: int = -1) -> list[list[int]]:
        """Ids of each line; `threads` = -1 lets SentencePiece use every core."""
        return self.sp.encode(list(lines), num_threads=threads)

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]:
        """Text of each id sequence; `<unk>` pieces are dropped, or shown as ` ⁇ ` with `keep_unk`."""
        return self.sp.decode([[i for i in seq if i > EOS or (keep_unk and i == UNK)] for seq in ids])

    def has_control(self, piece: str, id: int) -> bool:
        """Whether `id` is the control symbol `piece` (<sep>, <cls>: tokenizers trained before s2s
        reserved it lack it)."""
        return self.sp.piece_to_id(piece) == id

    def pieces(self, line: str) -> list[str]:
        return self.sp.encode(line, out_type=str)

    def id_pieces(self, ids: Sequence[int]) -> list[str]:
        """The piece of each id (`<2en>` for a control token)."""
        return self.sp.id_to_piece(list(ids)) if ids else []

    def pieces_of(self, lines: Sequence[str], threads: int = -1) -> list[list[str]]:
        """`pieces` of each line, in one call (`threads` as in `encode`)."""
        return self.sp.encode(list(lines), out_type=str, num_threads=threads)

    def words(self, line: str) -> list[str]:
        """The words of `line` as a tagger reads them, one tag each: the tokenizer's, each beginning at
        a piece that `word_starts` marks (what training's labels and `decoding.read` use).

        So SentencePiece's rule decides: after its normalization, only whitespace separates words, and
        text it drops (a zero-width space, a control character) is no word. A line Python sees as
        blank has none: s2s skips such lines when it trains and translates.
        """
        if not line.strip():
            return []
        ids, pieces = self.sp.encode(line), self.sp.encode(line, out_type=str)  # str: unknowns as written
        return ["".join(pieces[i] for i in word).removeprefix("\u2581") for word in self._word_spans(ids)]

    def word_counts(self, lines: Sequence[str], threads: int = -1) -> list[int]:
        """len(self.words(line)) of each line, in one batched encoding."""
        counts = [len(self._word_spans(ids)) for ids in self.encode(lines, threads)]
        return [count if line.strip() else 0 for count, line in zip(counts, lines, strict=True)]

    def _word_spans(self, ids: Sequence[int]) -> list[range]:
        """Where each word's pieces are in `ids`: from a word-start piece up to the next (pieces
        before the first start belong to no word and get no tag)."""
        begins = self.word_starts()
        starts = [i for i, token in enumerate(ids) if begins[token]]
        return [range(a, b) for a, b in pairwise([*starts, len(ids)])]

    def word_starts(self) -> np.ndarray:
        """(vocab,) bool: which pieces begin a whitespace-separated word (SentencePiece marks them ▁).

        Made once per tokenizer (a pass over the vocabulary in Python), then shared read-only.
        """
        if self._word_starts is None:
            starts = np.array([self.sp.id_to_piece(i).startswith("\u2581") for i in range(self.vocab_size)])
            starts.flags.writeable = False
            self._word_starts = starts
        return self._word_starts


@dataclass(frozen=True)
class TokenizerPair:
    """What reads and writes each side of a run's pairs, and what its targets are.

    A translation's `tgt` is a `Tokenizer` (the same object as `src` when the vocabulary is joint); a
    reader's is its label set, `Labels`, which shares a tokenizer's `encode`, `decode` and
    `vocab_size`. `load_tokenizers` decides it once, from the files, with the `targets` (a
    translation's pieces, or the label set's kind) that do the work that differs between them.
    """

    src: Tokenizer
    tgt: Tokenizer | Labels
    targets: Targets

    @property
    def joint(self) -> bool:
        return self.src is self.tgt

    @property
    def labels(self) -> Labels:
        """A reader's label set (its target side)."""
        return cast(Labels, self.tgt)

    @property
    def tgt_tokenizer(self) -> Tokenizer:
        """A translation's target tokenizer (its target side): what pieces and prefixes need."""
        assert "tgt" in self.targets.piece_sides, "a reader's target side is its label set"
        return cast(Tokenizer, self.tgt)

    def target_ids(
        self, sources: Sequence[Sequence[int]], lines: Sequence[str], threads: int = -1
    ) -> list[list[int]]:
        """What the model must predict for each target line, given its source's ids.

        A translation's target pieces; a reader's label ids (classify: one per line; tag: one per
        source piece, PAD off a word's first piece: `Labels.targets`).
        """
        return self.targets.ids(self, sources, lines, threads)

    def encode_written(self, lines: Sequence[str]) -> list[list[int]]:
        """Each target line's ids in the order the model writes them (to score a given target)."""
        return [self.targets.in_model_order(ids) for ids in self.tgt.encode(lines)]

    def decode_written(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]:
        """The text of each id sequence the model wrote, in reading order (`Tokenizer.decode`)."""
        return self.tgt.decode([self.targets.in_model_order(seq) for seq in ids], keep_unk)


def tokenizer_files(directory: Path, joint: bool) -> dict[str, Path]:
    """Where the model files of each side live inside `directory`; a reader's label set too."""
    files = (
        {"joint": directory / "spm.model"}
        if joint
        else {
            "src": directory / "spm.src.model",
            "tgt": directory / "spm.tgt.model",
        }
    )
    if (directory / LABELS_FILE).is_file():
        files["labels"] = directory / LABELS_FILE
    return files


def load_tokenizers(directory: Path, joint: bool, right_to_left: bool = False) -> TokenizerPair:
    """The tokenizers in `directory`; with a label set there, a reader's pair of the set's task.

    `right_to_left` (model.right_to_left): a translation's targets are written last piece first.
    """
    files = tokenizer_files(directory, joint)
    src = Tokenizer(files["joint"] if joint else files["src"])
    if "labels" in files:
        labels = Labels.load(files["labels"])
        return TokenizerPair(src, labels, labels.kind)
    targets = RIGHT_TO_LEFT if right_to_left else TRANSLATION
    return TokenizerPair(src, src if joint else Tokenizer(files["tgt"]), targets)


def tokenizer_checksums(directory: Path, joint: bool) -> dict[str, str]:
    """sha256 of each tokenizer model file there is, keyed by file name."""
    files = tokenizer_files(directory, joint).values()
    return {path.name: file_sha256(path) for path in files if path.is_file()}


def copy_tokenizers(source: Path, target: Path, joint: bool) -> None:
    """Copy another run's tokenizer model(s) into `target`, a reader's label set too; one already
    there must be identical."""
    load_tokenizers(source, joint)  # missing or unreadable: a clear error
    target.mkdir(parents=True, exist_ok=True)
    for path in tokenizer_files(source, joint).values():
        copy = target / path.name  # what `tokenizer_files(target, joint)` names once it is there
        if copy.is_file() and file_sha256(copy) != file_sha256(path):
            raise RunDirError(f"{copy} differs from {path}, the tokenizer of the weights to start from")
        shutil.copyfile(path, copy)
        log.info("tokenizer %s copied from %s", copy.name, path)


def train_or_load_tokenizers(
    cfg: TokenizerConfig,
    corpora: Sequence[CorpusConfig],
    directory: Path,
    may_train: bool = True,
    targets: Targets = TRANSLATION,
) -> TokenizerPair:
    """Load the tokenizers in `directory`, training the missing ones first when `may_train`.

    Without `may_train` (a run that already has weights), a missing tokenizer is an error: a new one
    would silently give the old weights other meanings. A reader (`targets` a reader's labels) has
    one SentencePiece model, trained on the source text, and a label set built from the targets (a
    reader's corpora are two files each).
    """
    files = tokenizer_files(directory, cfg.joint) | targets.files(directory)
    sides = {
        "joint": [(c, side) for side in targets.piece_sides for c in corpora],
        "src": [(c, "src") for c in corpora],
        "tgt": [(c, "tgt") for c in corpora],
    }
    languages = language_tokens(corpora)  # they start sources: in the joint or the source model
    controls = {"joint": [*cfg.control_tokens, *languages], "src": [*cfg.control_tokens, *languages]}
    reused_labels = may_train and any(path.is_file() for path in targets.files(directory).values())
    for side, path in files.items():
        if path.is_file():
            log.info("reusing tokenizer %s", path)
            continue
        if not may_train:
            raise RunDirError(
                f"tokenizer not found: {path}; the run's checkpoints were trained with it, so it cannot "
                "be trained anew: restore it, or start over with --overwrite"
            )
        directory.mkdir(parents=True, exist_ok=True)
        if side == "labels":  # after the SentencePiece model, whose words the tags must fit
            tokenizer = Tokenizer(files["joint"] if cfg.joint else files["src"])
            kind = cast(LabelTargets, targets)  # only a reader's targets have a label set
            build_labels(kind, [c.src for c in corpora], [c.tgt for c in corpora], path, tokenizer)
        else:
            _train(cfg, sides[side], path, controls.get(side, list(cfg.control_tokens)))
    pair = load_tokenizers(directory, cfg.joint)
    if reused_labels:  # not built from these targets: a tokenizer stage's, or a fine-tuned reader's
        check_known_labels(pair.labels, [c.src for c in corpora], [c.tgt for c in corpora], pair.src)
    return pair


def _train(cfg: TokenizerConfig, sides: list[Side], target: Path, controls: list[str]) -> None:
    """Train one SentencePiece model with the control tokens `controls` after s2s's own; it appears
    at `target` only once complete."""
    named = ", ".join(f"{c.name} {side}" for c, side in sides)
    log.info("training %s tokenizer (vocab %d) on %s", cfg.type, cfg.vocab_size, named)
    prefix = target.parent / f".{target.stem}.tmp{os.getpid()}"
    # In a child process: the sample and SentencePiece's trainer take hundreds of MB that the
    # allocator would otherwise keep in this process through the whole training run.
    with spawned_pool(1, "training the tokenizer") as child:
        child.submit(_train_model, cfg, sides, prefix, controls).result()
    os.replace(f"{prefix}.vocab", target.with_suffix(".vocab"))
    os.replace(f"{prefix}.model", target)


def _train_model(cfg: TokenizerConfig, sides: list[Side], prefix: Path, controls: list[str]) -> None:
    """SentencePiece training on a sample of `sides`; writes PREFIX.model and PREFIX.vocab."""
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sample_lines(sides, cfg.max_sentences)),
            model_prefix=str(prefix),
            model_type=cfg.type,
            vocab_size=cfg.vocab_size,
            character_coverage=cfg.character_coverage,
            split_digits=cfg.split_digits,
            byte_fallback=cfg.byte_fallback,
            pad_id=PAD,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            # never produced from text, dropped when decoding; declared ones after s2s's own, then
            # a multilingual run's language tokens
            control_symbols=[*CONTROL_PIECES, *controls],
            hard_vocab_limit=False,
            num_threads=os.cpu_count() or 1,
            minloglevel=2,
        )
    except RuntimeError as e:
        named = ", ".join(f"{c.name} {side}" for c, side in sides)
        raise DataError(f"could not train the tokenizer on {named}: {e}") from None
