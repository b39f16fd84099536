"""The `data` section: the training corpora (weights, tags, cleaning), validation, the prepared corpus."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seq2seq.config.bounds import MAX_TEMPERATURE, MIN_TEMPERATURE
from seq2seq.config.corpus import CleanConfig, CorpusConfig, ValidConfig, direction_of, language_token
from seq2seq.config.rules import Rule, broken
from seq2seq.config.task import Task

__all__ = ["CleanConfig", "CorpusConfig", "DataConfig", "ValidConfig", "direction_of", "language_token"]


@dataclass(frozen=True)
class DataConfig:
    """Training corpora, validation files, the training length filter, the prepared corpus.

    Training text is either `corpora` (named, weighted, tagged, cleaned) or the plain
    `train_src`/`train_tgt`: one file or a list (the i-th source file aligned with the i-th target
    file), each pair of files a corpus of weight 1.
    """

    # required unless `corpora`: training text, one sentence a line; a file or a list of files (each
    # pair of files a corpus of weight 1, named train, train.1, ...)
    train_src: tuple[str, ...] = ()
    train_tgt: tuple[str, ...] = ()  # the target files, aligned with train_src's line by line
    # instead of train_src and train_tgt: named corpora, each weighted, tagged and cleaned on its own
    corpora: tuple[CorpusConfig, ...] = ()
    valid_src: str = ""  # required (bilingual): validation source text (loss, perplexity, BLEU)
    valid_tgt: str = ""  # required (bilingual): its references
    valid: tuple[ValidConfig, ...] = ()  # a multilingual run's validation sets, one per direction
    src_lang: str = ""  # ISO 639-1 code of the source language (clean.langid of a corpus naming none)
    tgt_lang: str = ""  # ISO 639-1 code of the target language (see src_lang)
    # >= 1: training pairs with more subword tokens on a side are dropped (and counted); validation
    # sources are cut to it
    max_len: int = 256
    # >= 0: drop training pairs whose token-length ratio exceeds this (0 = off; not for readers)
    max_len_ratio: float = 3.0
    # a multilingual run samples directions by (size x weight) ** (1/T) each epoch: 1 keeps the
    # proportions, 5 flattens them so small directions are not drowned (0.01 - 100)
    temperature: float = 1.0
    # where the tokenized training corpus lives ("" = RUN_DIR/prepared); runs that share a corpus and
    # a tokenizer can share one directory
    prepared_dir: str = ""

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


def languages_of(corpora: Sequence[CorpusConfig]) -> list[str]:
    """The languages the corpora name on either side, sorted (none for a bilingual run's)."""
    return sorted({code for c in corpora for code in (c.src_lang, c.tgt_lang) if code})


def language_tokens(corpora: Sequence[CorpusConfig]) -> list[str]:
    """Their tokens, in the order the tokenizer reserves them. Each language gets one, target or not,
    so that a direction not trained (fr-de when only X-en and en-X were) can still be asked for."""
    return [language_token(code) for code in languages_of(corpora)]
