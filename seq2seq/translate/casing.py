"""Lines in ALL CAPS or Title Case, translated in the case the model learnt, then given that case back
(`--restore-case`).

A model trained on ordinary text has almost no upper-case pieces: an ALL-CAPS line reaches it as a
string of letters, and it writes nonsense. Here such a line is first recased word by word, as a
truecaser does: each word takes the form it has most often inside a sentence of the run's own
training source (read from the prepared corpora it trained on: `STRASSE` becomes `Straße`),
and a word that text lacks takes the casing the run's SentencePiece model cuts into fewer pieces
(lower case, or a capital first letter); the line's first word is capitalized. The translation is
then written in the line's case: ALL CAPS again, or each word capitalized
(`seq2seq.data.augment.title`, as Title Case references are). A line the recasing leaves as it was
(ordinary text whose words all begin with a capital, such as "Zwei Hunde.") is translated as given.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from seq2seq.data.augment import title
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.errors import Seq2SeqError
from seq2seq.run.layout import RunDir
from seq2seq.translate.engine import LineTranslator
from seq2seq.translate.lines import Translation
from seq2seq.translate.request import Request

WORD = re.compile(r"[^\W\d_]+")  # a run of letters
MIN_LETTERS = 2  # an ALL-CAPS line has at least this many cased letters ("A." is not shouting)
TRUECASE_LINES = 200_000  # training source lines read for the table of word forms (about a second)
CASING_FILE = "casing.txt"  # an export's table of word forms (`s2s export`), one form a line

log = logging.getLogger(__name__)


class SourceTokenizer(Protocol):
    """What recasing reads of a run's source tokenizer (`seq2seq.data.tokenizer.Tokenizer`)."""

    def pieces(self, line: str) -> list[str]: ...

    def decode(self, ids: Sequence[Sequence[int]], keep_unk: bool = False) -> list[str]: ...


@dataclass(frozen=True)
class Recased:
    """What a line is translated as, and how its translations get the line's case back."""

    text: str
    restore: Callable[[str], str]


def unchanged(text: str) -> str:
    return text


def upper(text: str) -> str:
    return text.upper()


def word_forms(lines: Iterable[str]) -> dict[str, str]:
    """Each word's most frequent form inside a sentence (its first word left out), by its upper case."""
    seen: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        for word in WORD.findall(line)[1:]:
            seen[word.upper()][word] += 1
    return {key: forms.most_common(1)[0][0] for key, forms in seen.items()}


def write_word_forms(path: Path, forms: Mapping[str, str]) -> None:
    """The table of word forms as an export keeps it: each form on its line, sorted (its upper case is
    its key)."""
    path.write_text("".join(form + "\n" for form in sorted(forms.values())), encoding="utf-8")


def read_word_forms(path: Path) -> dict[str, str]:
    """The table `write_word_forms` wrote, by upper case again."""
    return {form.upper(): form for form in path.read_text(encoding="utf-8").splitlines() if form}


def training_source(run_dir: Path) -> list[str]:
    """Up to TRUECASE_LINES source lines of the prepared corpora the run in `run_dir` trained on (in
    `data.prepared_dir` or its own prepared/, their manifests checked, not their arrays' checksums);
    none, said in a warning, where they are gone, unreadable or not the ones it trained on (another
    run's, in a shared `data.prepared_dir`): recasing then goes by the tokenizer's pieces alone."""
    from seq2seq.data.prepared import run_trained_corpora  # memory maps, only when asked

    run = RunDir(run_dir)
    if not run.config_file.is_file():
        return []
    try:
        cfg = run.load_config()
        tokenizer = load_tokenizers(run.tokenizer_dir, cfg.tokenizer.joint).src
        corpora = run_trained_corpora(run_dir, cfg, tokenizer, arrays=False)
    except (Seq2SeqError, OSError) as err:
        log.warning("case restoring: no word forms from %s's training text: %s", run_dir, err)
        return []
    lines: list[str] = []
    for corpus in corpora:
        src = corpus.src
        lines += tokenizer.decode(src.sequences(range(min(len(src), TRUECASE_LINES - len(lines)))))
        if len(lines) >= TRUECASE_LINES:
            break
    return lines


class Recaser:
    """Recases lines: by `forms` (upper case -> the form to use), else by the piece counts of
    `pieces` (a tokenizer's: a word with a leading space)."""

    def __init__(self, pieces: Callable[[str], list[str]], forms: Mapping[str, str] | None = None) -> None:
        self._pieces = lru_cache(maxsize=1 << 16)(lambda word: len(pieces(" " + word)))
        self.forms: Mapping[str, str] = forms or {}

    @classmethod
    def of_run(cls, run_dir: Path, tokenizer: SourceTokenizer) -> Recaser:
        """The recaser of the run in `run_dir` (its training source's word forms, its source tokenizer),
        or of an export, which keeps its run's word forms (`CASING_FILE`) but not its training text."""
        table = run_dir / CASING_FILE
        if table.is_file():
            return cls(tokenizer.pieces, read_word_forms(table))
        return cls(tokenizer.pieces, word_forms(training_source(run_dir)))

    def word(self, word: str, first: bool) -> str:
        """`word` as the table has it, else in lower case or capitalized (whichever cuts into fewer
        pieces); capitalized where it is the line's first word."""
        known = self.forms.get(word.upper())
        if known is not None:
            return known[:1].upper() + known[1:] if first else known
        lower, capital = word.lower(), word[:1].upper() + word[1:].lower()
        if first or self._pieces(capital) < self._pieces(lower):
            return capital
        return lower

    def line(self, line: str) -> Recased:
        """How to translate `line`: recased and restored if it is ALL CAPS or Title Case, else as given."""
        cased = [c for c in line if c.isupper() or c.islower()]
        if len(cased) >= MIN_LETTERS and all(c.isupper() for c in cased):
            restore = upper
        elif cased and title(line) == line:
            restore = title
        else:
            return Recased(line, unchanged)
        first = next(WORD.finditer(line)).start()  # a cased letter is a letter: there is a word
        text = WORD.sub(lambda m: self.word(m.group(), m.start() == first), line)
        return Recased(text, restore) if text != line else Recased(line, unchanged)


class CaseRestored:
    """LINES translated as `Recaser.line` recases them, each hypothesis given its line's case back."""

    def __init__(self, lines: LineTranslator, recaser: Recaser) -> None:
        self.lines, self.recaser = lines, recaser

    def translate(
        self,
        lines: Sequence[str],
        request: Request,
        first_line: int = 1,
        prefixes: Sequence[str] | None = None,
    ) -> list[Translation]:
        """One `Translation` per line, in order (`LineTranslator`)."""
        recased = [self.recaser.line(line) for line in lines]
        out = self.lines.translate([r.text for r in recased], request, first_line, prefixes)
        return restored(recased, out)


def restored(recased: Sequence[Recased], translations: Sequence[Translation]) -> list[Translation]:
    """Each line's translations given its case back (`Recased.restore`), their scores as they were."""
    return [
        Translation([r.restore(text) for text in t.texts], t.scores)
        for r, t in zip(recased, translations, strict=True)
    ]
