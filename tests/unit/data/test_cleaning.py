"""The language rule (`clean.langid`) expects the corpus's own languages, by language: a code with a
region or script (pt_BR, en-GB) is its language to a language identifier."""

from __future__ import annotations

import pytest

from seq2seq.config.data import CleanConfig
from seq2seq.data.cleaning import CODE, KEEP, text_reasons

GERMAN = ["Der Hund schläft unter dem großen Baum im Garten.", "Eine Frau liest ein Buch in der Bibliothek."]
ENGLISH = [
    "The dog is sleeping under the big tree in the garden.",
    "A woman is reading a book in the library.",
]


@pytest.mark.parametrize(
    ("languages", "expected"),
    [
        (("de", "en"), KEEP),
        (("de_DE", "en-GB"), KEEP),
        (("en", "de"), CODE["wrong_language"]),
        (("de_AT", "fr_CA"), CODE["wrong_language"]),
    ],
)
def test_langid_expects_the_language_of_each_code(languages, expected):
    pytest.importorskip("py3langid", reason="the optional extra s2s[clean] (in .[dev]) is missing")
    reasons = text_reasons(GERMAN, ENGLISH, CleanConfig(langid=True), languages)
    assert reasons.tolist() == [expected] * len(GERMAN)
