"""The control tokens put before every source when a run decodes: a multilingual run's
target-language token (`--to`), then a corpus tag (`--tag`), in the order training put them
(`seq2seq.data.control.source_prefix`).

A bilingual run puts nothing before its sources, or the tag asked for. A multilingual run needs a
target language: the one it was trained to translate into, if there is one, else `--to`; any language
of the run may be asked for, a direction it never trained included (zero-shot).
"""

from __future__ import annotations

from seq2seq.config.data import DataConfig, language_token
from seq2seq.data.control import source_prefix
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError


def target_languages(data: DataConfig) -> list[str]:
    """The languages a multilingual run was trained to translate into, sorted (none if bilingual)."""
    return sorted({c.tgt_lang for c in data.corpora if c.tgt_lang})


class SourceTokens:
    """The control ids an engine puts before every source, chosen once per command (`use`)."""

    def __init__(self, tokenizer: Tokenizer, data: DataConfig) -> None:
        self.tokenizer, self.data = tokenizer, data
        self.to, self.tag = "", ""  # the target language (a multilingual run's) and the tag in use
        self._prefix: tuple[int, ...] | None = None  # None: a multilingual run waiting for --to
        if len(target_languages(data)) <= 1:
            self.use()

    def use(self, to: str = "", tag: str = "", option: str = "--to") -> None:
        """Translate into `to` (a multilingual run's language code), with the corpus tag `tag`;
        `option` names where `to` came from in the errors (`language`)."""
        self.to, self.tag = self.language(to, option), tag
        language = language_token(self.to) if self.to else ""
        self._prefix = source_prefix(self.tokenizer, language, tag)

    @property
    def prefix(self) -> tuple[int, ...]:
        if self._prefix is None:
            raise self._choose()
        return self._prefix

    def language(self, to: str, option: str = "--to") -> str:
        """The target language `to` asks for: checked, or the only one the run was trained into.

        `option` names where `to` came from in the errors (`--to`, or a server request's field)."""
        languages, targets = self.data.languages(), target_languages(self.data)
        if not languages:
            if to:
                raise Seq2SeqError(f"{option} {to}: this run translates one direction; leave {option} out")
            return ""
        if not to:
            if len(targets) > 1:
                raise self._choose(option)
            return targets[0]
        if to not in languages:
            raise Seq2SeqError(
                f"{option} {to}: not a language of this run (its languages: {', '.join(languages)})"
            )
        return to

    def _choose(self, option: str = "--to") -> Seq2SeqError:
        return Seq2SeqError(
            f"this run translates into {', '.join(target_languages(self.data))}: choose one with {option}"
        )
