"""The cleaning rules of `s2s prepare`: which pairs of a corpus are dropped, and why.

Each pair is dropped by the first rule it breaks, in the order of `REASONS`, and counted under that
reason: an empty side; the text rules a corpus turns on (`CleanConfig`: an untranslated copy, a
control character, too few letters or digits, the wrong language); the length rules on its tokens
(`seq2seq.data.encode`); and last, an exact duplicate of an earlier pair (`SeenPairs`), so only pairs
that would otherwise be kept are remembered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from seq2seq.config.data import CleanConfig
from seq2seq.errors import DataError

REASONS = (
    "empty",
    "copy",
    "control_chars",
    "few_alnum",
    "wrong_language",
    "too_long",
    "bad_ratio",
    "duplicate",
)
REASON_NAMES = {
    "empty": "an empty side",
    "copy": "source equal to target",
    "control_chars": "a control character",
    "few_alnum": "too few letters or digits",
    "wrong_language": "the wrong language",
    "too_long": "too long",
    "bad_ratio": "length ratio too high",
    "duplicate": "a duplicate pair",
}
KEEP = 0  # the reason code of a kept pair; reason i of REASONS has code i + 1
CODE = {reason: i + 1 for i, reason in enumerate(REASONS)}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # Unicode Cc, except the tab
_NOT_ALNUM = re.compile(r"[\W_]")
_SPACE = re.compile(r"\s")
_REGION = re.compile(r"[_-]")  # what parts a language code from its region or script: pt_BR, zh-Hant


def text_reasons(
    src: Sequence[str], tgt: Sequence[str], clean: CleanConfig, languages: tuple[str, str]
) -> np.ndarray:
    """(N,) uint8: the code of the first text rule each pair breaks (`CODE`), or KEEP.

    `languages` are the corpus's (source, target) languages, what `clean.langid` expects; a code with a
    region or script (pt_BR, zh-Hant) expects its language (pt, zh), all that language ID tells apart.
    """
    expected = tuple(_REGION.split(code, maxsplit=1)[0] for code in languages)
    codes = np.zeros(len(src), np.uint8)
    for i, (s, t) in enumerate(zip(src, tgt, strict=True)):
        if not (s.strip() and t.strip()):
            codes[i] = CODE["empty"]
        elif clean.copies and s.split() == t.split():
            codes[i] = CODE["copy"]
        elif clean.control_chars and (_CONTROL.search(s) or _CONTROL.search(t)):
            codes[i] = CODE["control_chars"]
        elif clean.min_alnum and min(_alnum_share(s), _alnum_share(t)) < clean.min_alnum:
            codes[i] = CODE["few_alnum"]
        elif clean.langid and (_language(s), _language(t)) != expected:
            codes[i] = CODE["wrong_language"]
    return codes


def _alnum_share(line: str) -> float:
    """Letters and digits among the characters that are not whitespace."""
    visible = len(line) - len(_SPACE.findall(line))
    return (len(line) - len(_NOT_ALNUM.findall(line))) / max(visible, 1)


_IDENTIFIER: list = []  # this process's py3langid model, loaded on first use (about a second)


def _language(line: str) -> str:
    if not _IDENTIFIER:
        _IDENTIFIER.append(load_language_identifier())
    return _IDENTIFIER[0].classify(line)[0]


def load_language_identifier() -> Any:  # py3langid ships no types
    """py3langid's model (97 languages, shipped inside the package: nothing is downloaded)."""
    try:
        from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
    except ImportError:
        raise DataError("clean.langid needs py3langid: pip install 's2s[clean]'") from None
    return LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE, norm_probs=False)


def pair_hashes(src: Sequence[str], tgt: Sequence[str]) -> np.ndarray:
    """(N,) uint64, never 0: a 64-bit hash of each (source, target) pair's exact text."""
    hashes = np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(f"{s}\t{t}".encode(), digest_size=8).digest(), "little")
            for s, t in zip(src, tgt, strict=True)
        ),
        np.uint64,
        len(src),
    )
    hashes[hashes == 0] = 1  # 0 marks an empty slot of `SeenPairs`
    return hashes


class SeenPairs:
    """The hashes of the pairs kept so far, in one open-addressing table: 16 bytes per pair at most.

    Sized for `capacity` pairs (the corpus's line count, known before it is read), so memory is
    bounded by the corpus and never grows as a Python set would (about 70 bytes per entry). Two
    different pairs share a 64-bit hash with probability ~N^2 / 2^65: 3e-6 for 10 million pairs.
    """

    def __init__(self, capacity: int) -> None:
        size = 1 << max(int(2 * max(capacity, 1) - 1).bit_length(), 4)  # at most half full
        self.slots = np.zeros(size, np.uint64)
        self.mask = np.uint64(size - 1)
        self.capacity, self.count = capacity, 0

    def add(self, hashes: np.ndarray) -> np.ndarray:
        """(N,) bool: which of `hashes` were not seen before (nor earlier in `hashes`); adds them."""
        unique, first = np.unique(hashes, return_index=True)
        new = np.zeros(len(hashes), bool)
        fresh = np.zeros(len(unique), bool)
        where = unique & self.mask  # (U,) the slot each probes next
        pending = np.arange(len(unique))
        while len(pending):
            slot = self.slots[where[pending]]
            empty = slot == 0
            # of the keys that found the same empty slot, the first takes it; the others probe on
            cand = pending[empty]
            _, winners = np.unique(where[cand], return_index=True)
            taken = cand[winners]
            self.slots[where[taken]] = unique[taken]
            fresh[taken] = True
            done = np.zeros(len(pending), bool)
            done[slot == unique[pending]] = True
            done[np.flatnonzero(empty)[winners]] = True
            moving = pending[~done & ~empty]
            where[moving] = (where[moving] + np.uint64(1)) & self.mask
            pending = pending[~done]
        new[first[fresh]] = True
        self.count += int(fresh.sum())
        assert self.count <= max(self.capacity, 1), "more pairs than the corpus has lines"
        return new
