"""The `data` section: the training corpora (weights, tags, cleaning), validation, the prepared corpus."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from seq2seq.config.augment import AugmentConfig
from seq2seq.config.bounds import MAX_CORPUS_WEIGHT, MAX_TEMPERATURE, MIN_TEMPERATURE
from seq2seq.config.rules import Rule, broken
from seq2seq.config.task import Task

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

    copies: bool = False  # drop pairs whose source equals their target (untranslated copies)
    control_chars: bool = False  # drop pairs with a control character (Unicode Cc other than tab)
    min_alnum: float = 0.0  # drop pairs where a side has a smaller share of letters/digits (0 = off)
    langid: bool = False  # drop pairs whose sides are not in the corpus's languages (py3langid)
    dedup: bool = False  # drop exact duplicates of an earlier pair of the corpus

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

    name: str = ""
    src: str = ""
    tgt: str = ""
    tsv: str = ""
    weight: float = 1.0
    tag: str = ""
    src_lang: str = ""
    tgt_lang: str = ""
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
                ),  # fmt: skip
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

    src: str = ""
    tgt: str = ""
    src_lang: str = ""
    tgt_lang: str = ""

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
                ),  # fmt: skip
            ]
        )


@dataclass(frozen=True)
class DataConfig:
    """Training corpora, validation files, the training length filter, the prepared corpus.

    Training text is either `corpora` (named, weighted, tagged, cleaned) or the plain
    `train_src`/`train_tgt`: one file or a list (the i-th source file aligned with the i-th target
    file), each pair of files a corpus of weight 1.
    """

    train_src: tuple[str, ...] = ()
    train_tgt: tuple[str, ...] = ()
    corpora: tuple[CorpusConfig, ...] = ()
    valid_src: str = ""
    valid_tgt: str = ""
    valid: tuple[ValidConfig, ...] = ()  # a multilingual run's validation sets, one per direction
    src_lang: str = ""  # ISO 639-1 code of the source language (clean.langid of a corpus naming none)
    tgt_lang: str = ""
    max_len: int = 256  # max subword tokens per side; longer training pairs are dropped
    max_len_ratio: float = 3.0  # drop training pairs whose token-length ratio exceeds this (0 = off)
    temperature: float = 1.0  # sampling across the directions of a multilingual run: 1 = by size, 5 = flatter
    prepared_dir: str = ""  # where `s2s prepare` keeps the token arrays ("" = RUN_DIR/prepared)

    @property
    def multilingual(self) -> bool:
        """Whether the corpora name their directions (`src_lang`, `tgt_lang`): one model for several."""
        return any(c.src_lang or c.tgt_lang for c in self.corpora)

    def languages(self) -> list[str]:
        """The languages of a multilingual run, sorted (none for a bilingual run)."""
        return languages_of(self.corpora)

    def language_tokens(self) -> list[str]:
        return language_tokens(self.corpora)

    def corpus_languages(self, corpus: CorpusConfig) -> tuple[str, str]:
        """(source, target) languages of `corpus`'s pairs, what its `clean.langid` expects: the ones it
        names itself (a multilingual run's direction), else data.src_lang and data.tgt_lang."""
        if corpus.src_lang or corpus.tgt_lang:
            return corpus.src_lang, corpus.tgt_lang
        return self.src_lang, self.tgt_lang

    def training_corpora(self) -> tuple[CorpusConfig, ...]:
        """The corpora training reads: `corpora`, or one per `train_src`/`train_tgt` pair of files
        (named train, train.1, ...)."""
        if self.corpora:
            return self.corpora
        return tuple(
            CorpusConfig(name=f"train.{i}" if i else "train", src=src, tgt=tgt)
            for i, (src, tgt) in enumerate(zip(self.train_src, self.train_tgt, strict=True))
        )

    def corpus_keys(self) -> list[dict[str, str]]:
        """Per training corpus, {role: the key its file's checksum is recorded under (`data_files`)}.

        `train_src`/`train_tgt` keep the keys they always had (train_src, train_src.1, ...).
        """
        if self.corpora:
            return [{role: f"corpora.{c.name}.{role}" for role in c.files()} for c in self.corpora]
        return [
            {"src": f"train_src.{i}" if i else "train_src", "tgt": f"train_tgt.{i}" if i else "train_tgt"}
            for i in range(len(self.train_src))
        ]

    def problems(self, control_tokens: tuple[str, ...] = (), task: Task = Task.TRANSLATE) -> list[str]:
        """Every broken rule of this section (the files are checked to exist only by training).

        `control_tokens` are tokenizer.control_tokens (what a tag may be), `task` model.task.
        """
        legacy = bool(self.train_src or self.train_tgt)
        names = [c.name for c in self.corpora]
        languages = bool(self.src_lang and self.tgt_lang)
        return (
            broken(
                [
                    (
                        legacy and bool(self.corpora),
                        "data.corpora: give the training text as data.corpora or as "
                        "data.train_src/train_tgt, not both",
                    ),
                    (not legacy and not self.corpora, "data.train_src: required (or data.corpora)"),
                    (not legacy and not self.corpora, "data.train_tgt: required (or data.corpora)"),
                    (
                        len(self.train_src) != len(self.train_tgt),
                        f"data.train_tgt: {len(self.train_tgt)} file(s) but data.train_src has "
                        f"{len(self.train_src)}: list the target file of each source file, in the same order",
                    ),
                    (
                        len(set(names)) != len(names),
                        "data.corpora: two corpora have the same name: "
                        + ", ".join(sorted({n for n in names if names.count(n) > 1})),
                    ),
                    *self._task_rules(task),
                    (not self.multilingual and not self.valid_src, "data.valid_src: required"),
                    (not self.multilingual and not self.valid_tgt, "data.valid_tgt: required"),
                    (
                        not self.multilingual and bool(self.valid),
                        "data.valid: validation sets by direction are a multilingual run's (corpora with "
                        "src_lang and tgt_lang); give data.valid_src and data.valid_tgt",
                    ),
                    (
                        self.multilingual and bool(self.valid_src or self.valid_tgt),
                        "data.valid_src: a multilingual run validates each direction: list them in "
                        "data.valid ({src, tgt, src_lang, tgt_lang} each)",
                    ),
                    (
                        self.multilingual and not self.valid,
                        "data.valid: required: a multilingual run's validation sets ({src, tgt, src_lang, "
                        "tgt_lang} each)",
                    ),
                    (
                        len({v.direction for v in self.valid}) != len(self.valid),
                        "data.valid: two validation sets have the same direction",
                    ),
                    (self.max_len < 1, "data.max_len: must be >= 1"),
                    (self.max_len_ratio < 0, "data.max_len_ratio: must be >= 0"),
                    *self._temperature_rules(),
                    *(
                        (
                            self.multilingual and token in control_tokens,
                            f"tokenizer.control_tokens: {token} is a language token, which a multilingual "
                            "run reserves itself: leave it out",
                        )
                        for token in self.language_tokens()
                    ),
                ]
            )
            + [
                problem
                for i, corpus in enumerate(self.corpora)
                for problem in corpus.problems(
                    f"data.corpora[{i}]", control_tokens, languages, self.multilingual
                )
            ]
            + [
                problem
                for i, valid in enumerate(self.valid if self.multilingual else ())
                for problem in valid.problems(f"data.valid[{i}]", self.languages())
            ]
        )

    def _temperature_rules(self) -> list[Rule]:
        """What the temperature implies: each direction's share ** (1 / T), of a multilingual run."""
        return [
            (
                not MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE,
                f"data.temperature: must be in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}] (1 samples "
                "directions by size, 100 about evenly; below, the smaller shares vanish)",
            ),
            (
                self.temperature != 1 and not self.multilingual,
                "data.temperature: samples across the directions of a multilingual run: give each "
                "corpus its src_lang and tgt_lang, or leave it out",
            ),
        ]

    def _task_rules(self, task: Task) -> list[Rule]:
        """A reader's examples are one source file and its label file (data.train_src/train_tgt)."""
        one_pair = [(bool(self.corpora), f"data.corpora: model.task {task} reads data.train_src/train_tgt")]
        return {Task.TRANSLATE: [], Task.CLASSIFY: one_pair, Task.TAG: one_pair}[task]

    def validation_sets(self) -> tuple[ValidConfig, ...]:
        """What training validates: a multilingual run's `valid`, or the one pair of files (no direction)."""
        return self.valid if self.multilingual else (ValidConfig(self.valid_src, self.valid_tgt),)


def direction_of(src_lang: str, tgt_lang: str) -> str:
    """`de-en` from its two language codes; "" when neither is named (a bilingual run)."""
    return f"{src_lang}-{tgt_lang}" if src_lang or tgt_lang else ""


def languages_of(corpora: Sequence[CorpusConfig]) -> list[str]:
    """The languages the corpora name on either side, sorted (none for a bilingual run's)."""
    return sorted({code for c in corpora for code in (c.src_lang, c.tgt_lang) if code})


def language_tokens(corpora: Sequence[CorpusConfig]) -> list[str]:
    """Their tokens, in the order the tokenizer reserves them. Each language gets one, target or not,
    so that a direction not trained (fr-de when only X-en and en-X were) can still be asked for."""
    return [language_token(code) for code in languages_of(corpora)]
