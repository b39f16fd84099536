"""One training corpus of the `data` section (files, weight, tag, languages, cleaning rules), and one
validation set of a multilingual run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.bounds import MAX_CORPUS_WEIGHT
from seq2seq.config.rules import broken

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a corpus's name is also its prepared directory's
LANGUAGE = re.compile(r"[a-z]{2,3}([_-][A-Za-z0-9]+)?")  # an ISO 639 code, maybe a script or region: pt_BR


def language_token(code: str) -> str:
    """The control token that asks for `code` as the target language (Johnson et al. 2017): <2fr>."""
    return f"<2{code}>"


@dataclass(frozen=True)
class CleanConfig:
    """Which cleaning rules `s2s prepare` applies to one corpus (all off by default).

    A pair is dropped by the first rule it breaks, in this order, after the empty-side rule and
    before the length rules (`seq2seq.data.cleaning`).
    """

    copies: bool = False  # drop pairs whose source equals their target, whitespace aside (copies)
    control_chars: bool = False  # drop pairs with a control character (Unicode Cc other than tab)
    # 0 - 1: drop pairs where a side's share of letters and digits among its non-space characters is
    # below this (0 = off)
    min_alnum: float = 0.0
    # drop pairs whose sides py3langid does not find in the corpus's languages (its own src_lang and
    # tgt_lang, else data.src_lang and data.tgt_lang; needs the `clean` extra)
    langid: bool = False
    # drop exact duplicates of an earlier pair of the corpus (a 64-bit hash a pair, 16 bytes at most)
    dedup: bool = False

    def problems(self, where: str, languages: bool) -> list[str]:
        return broken(
            [
                (not 0 <= self.min_alnum <= 1, f"{where}.min_alnum: must be in [0, 1]"),
                (
                    self.langid and not languages,
                    f"{where}.langid: needs the corpus's languages: its src_lang and tgt_lang, or "
                    "data.src_lang and data.tgt_lang (ISO 639-1 codes, e.g. de, en)",
                ),
            ]
        )


@dataclass(frozen=True)
class CorpusConfig:
    """One training corpus: two aligned files (`src`, `tgt`) or one TSV file (`tsv`: source<TAB>target).

    Each epoch draws size x `weight` of its pairs (2 = every pair twice, 0.3 = a fresh 30% sample each
    epoch); `tag`, a control token declared in tokenizer.control_tokens, starts each of its sources.
    In a multilingual run every corpus names its direction (`src_lang`, `tgt_lang`), and its sources
    start with the target language's token (`language_token`: <2en>), before any tag. Every setting
    here is the corpus's own: its languages (`DataConfig.corpus_languages`), tag, weight, `clean`
    rules and `augment` shares hold for its pairs alone, whatever the other corpora say.
    """

    name: str = ""  # required: letters, digits, `_`, `.`, `-`; also names RUN_DIR/prepared/NAME/
    src: str = ""  # source text, one sentence a line (plain, gzip, xz, bzip2 or zstd); with `tgt`
    tgt: str = ""  # target text aligned line by line with `src`
    tsv: str = ""  # instead of src and tgt: one file of source<TAB>target lines (OPUS's layout)
    # > 0: pairs drawn each epoch = size x weight (4: every pair four times; 0.3: a fresh 30% sample)
    weight: float = 1.0
    tag: str = ""  # a control token of tokenizer.control_tokens put first in each source (`<bt>`)
    # a multilingual run: the corpus's direction as language codes (de, en, pt_BR); its sources start
    # with the target language's token (<2en>), before any tag
    src_lang: str = ""
    tgt_lang: str = ""  # see src_lang
    clean: CleanConfig = field(default_factory=CleanConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)  # modified pairs while training

    @property
    def direction(self) -> str:
        """`de-en` for a corpus of a multilingual run, "" for a bilingual run's."""
        return direction_of(self.src_lang, self.tgt_lang)

    def files(self) -> dict[str, str]:
        """Its text files by role: {"src": ..., "tgt": ...} or {"tsv": ...}."""
        return {"tsv": self.tsv} if self.tsv else {"src": self.src, "tgt": self.tgt}

    def problems(
        self, where: str, control_tokens: tuple[str, ...], languages: bool, multilingual: bool
    ) -> list[str]:
        two_files = bool(self.src or self.tgt)
        problems = broken(
            [
                *(
                    (
                        multilingual and not LANGUAGE.fullmatch(code),
                        f"{where}.{key}: "
                        + (
                            f"{code!r} is not a language code such as de, en or pt_BR"
                            if code
                            else "required: a multilingual run names the direction of every corpus"
                        ),
                    )
                    for key, code in (("src_lang", self.src_lang), ("tgt_lang", self.tgt_lang))
                ),
                (
                    not NAME.fullmatch(self.name),
                    f"{where}.name: required: letters, digits, '_', '.' or '-' (it names the corpus's "
                    "prepared directory)",
                ),
                (two_files and bool(self.tsv), f"{where}: give src and tgt, or tsv, not both"),
                (
                    not self.tsv and not (self.src and self.tgt),
                    f"{where}: give src and tgt (two aligned files) or tsv (one source<TAB>target file)",
                ),
                (
                    not 0 < self.weight <= MAX_CORPUS_WEIGHT,
                    f"{where}.weight: must be > 0 and at most {MAX_CORPUS_WEIGHT:g} (each pair drawn "
                    "that many times an epoch)",
                ),
                (
                    bool(self.tag) and self.tag not in control_tokens,
                    f"{where}.tag: {self.tag} is not declared in tokenizer.control_tokens "
                    f"({', '.join(control_tokens) or 'none declared'}); declare it there",
                ),
            ]
        ) + self.clean.problems(f"{where}.clean", languages or bool(self.src_lang and self.tgt_lang))
        return problems + self.augment.problems(f"{where}.augment")


@dataclass(frozen=True)
class ValidConfig:
    """One validation set of a multilingual run: two aligned files and their direction."""

    src: str = ""  # required: source text of the direction
    tgt: str = ""  # required: its references, aligned line by line
    src_lang: str = ""  # required: the source language's code, one of the training corpora's
    tgt_lang: str = ""  # required: the target language's code (the direction validated: de-en)

    @property
    def direction(self) -> str:
        """`de-en`: the direction it validates."""
        return direction_of(self.src_lang, self.tgt_lang)

    def problems(self, where: str, languages: list[str]) -> list[str]:
        return broken(
            [
                (not self.src, f"{where}.src: required"),
                (not self.tgt, f"{where}.tgt: required"),
                *(
                    (
                        code not in languages,
                        f"{where}.{key}: "
                        + (
                            f"{code!r} is not a language of the training corpora ({', '.join(languages)})"
                            if code
                            else "required: the direction it validates"
                        ),
                    )
                    for key, code in (("src_lang", self.src_lang), ("tgt_lang", self.tgt_lang))
                ),
            ]
        )


def direction_of(src_lang: str, tgt_lang: str) -> str:
    """`de-en` from its two language codes; "" when neither is named (a bilingual run)."""
    return f"{src_lang}-{tgt_lang}" if src_lang or tgt_lang else ""
