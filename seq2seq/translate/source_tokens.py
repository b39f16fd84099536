"""The control tokens put before every source when a run decodes: a multilingual run's
target-language token (`--to`), then a corpus tag (`--tag`), in the order training put them
(`seq2seq.data.control.source_prefix`).

A bilingual run puts nothing before its sources, or the tag asked for. A multilingual run needs a
target language: the one it was trained to translate into, if there is one, else `--to`; any language
of the run may be asked for, a direction it never trained included (zero-shot).

A token has one role: a language token comes only from a language code (`--to`, a request's `to`),
and a tag only from the control tokens the run's config declares (`tokenizer.control_tokens`), never
a language token, though the tokenizer holds both as control symbols.
"""

from __future__ import annotations

from seq2seq.config import Config
from seq2seq.config.data import DataConfig, language_token
from seq2seq.data.control import source_prefix
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.errors import Seq2SeqError
from seq2seq.translate.direction import STRAIGHT, Direction


def target_languages(data: DataConfig) -> list[str]:
    """The languages a multilingual run was trained to translate into, sorted (none if bilingual)."""
    return sorted({c.tgt_lang for c in data.corpora if c.tgt_lang})


class SourceTokens:
    """The control ids an engine puts before every source: computed per request from its target
    language and tag (`prefix`), never a state a call changes."""

    def __init__(self, tokenizer: Tokenizer, config: Config) -> None:
        self.tokenizer, self.data = tokenizer, config.data
        self.tags = config.tokenizer.control_tokens  # what --tag may be: the declared control tokens
        self._prefixes: dict[tuple[str, str], tuple[int, ...]] = {}  # by (language, tag), once checked

    def prefix(self, direction: Direction = STRAIGHT, option: str = "--to") -> tuple[int, ...]:
        """The ids put before every source translated in `direction`: into its `to` (a multilingual
        run's language code; "" for the only one) with its tag; `option` names where `to` came from in
        the errors (`language`)."""
        key = (self.language(direction.to, option), self.checked_tag(direction.tag))
        if key not in self._prefixes:
            language = language_token(key[0]) if key[0] else ""
            self._prefixes[key] = source_prefix(self.tokenizer, language, key[1])
        return self._prefixes[key]

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
        if to in (codes := self._codes()):
            raise Seq2SeqError(
                f"{option} {to} is the language token of {codes[to]}: ask for the language by its code, "
                f"with {option} {codes[to]}"
            )
        if to not in languages:
            raise Seq2SeqError(
                f"{option} {to}: not a language of this run (its languages: {', '.join(languages)})"
            )
        return to

    def checked_tag(self, tag: str) -> str:
        """`tag` if the run's config declares it (`tokenizer.control_tokens`); a language token, or a
        token it does not declare, is an error saying what to ask for instead."""
        if not tag or tag in self.tags:
            return tag
        if tag in (codes := self._codes()):
            raise Seq2SeqError(
                f"--tag {tag} is the language token of {codes[tag]}, which s2s puts first itself: "
                f"choose the language with --to {codes[tag]}"
            )
        declared = ", ".join(self.tags) or "none"
        raise Seq2SeqError(
            f"--tag {tag}: not a corpus tag of this run (the tags its tokenizer.control_tokens declares: "
            f"{declared})"
        )

    def _codes(self) -> dict[str, str]:
        """The run's language tokens, each to its language code ({"<2de>": "de"}; none if bilingual)."""
        return {language_token(code): code for code in self.data.languages()}

    def _choose(self, option: str = "--to") -> Seq2SeqError:
        return Seq2SeqError(
            f"this run translates into {', '.join(target_languages(self.data))}: choose one with {option}"
        )
