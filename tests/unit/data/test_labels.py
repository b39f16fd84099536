"""A reader's label set, and a tagger's words: one definition of a word (the tokenizer's,
`Tokenizer.words`) for the tag lines training accepts, the tags it places and the tags translation
answers, whatever whitespace or invisible characters a line holds."""

from __future__ import annotations

import random

import pytest
import torch

from seq2seq.config import TokenizerConfig, config_from_dict
from seq2seq.data.corpora import file_corpora
from seq2seq.data.labels import LABELS_FILE, Labels, check_targets
from seq2seq.data.targets import TARGETS
from seq2seq.data.tokenizer import TokenizerPair, train_or_load_tokenizers
from seq2seq.decoding.settings import SearchSettings
from seq2seq.errors import DataError
from seq2seq.models.build import build_model
from seq2seq.special import PAD
from seq2seq.translate.request import Request
from seq2seq.translate.translator import Translator
from tests.conftest import WORDS, tiny_config_dict, write_corpus

# What may stand between words: whitespace of both Python and SentencePiece, whitespace of only one
# of them (\x1c and \x85 are Python's; U+200B zero-width space is SentencePiece's), and characters
# that SentencePiece drops or keeps although nobody sees them
SEPARATORS = [" ", "  ", "\t", "\u00a0", "\u3000", "\u2009", "\u2028", "\u205f", "\x1c", "\x85", "\u200b"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\x07", "\u0301", "\u00ad"]


def noisy_lines(count: int, seed: int) -> list[str]:
    """Lines of corpus words, unknown characters and invisible "words", joined by SEPARATORS."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        tokens = [rng.choice([*WORDS, *WORDS, "猫", *INVISIBLE]) for _ in range(rng.randint(1, 7))]
        if rng.random() < 0.5:
            tokens[rng.randrange(len(tokens))] += rng.choice(INVISIBLE)  # glued to a word
        line = rng.choice(["", *SEPARATORS])
        line += "".join(token + rng.choice(SEPARATORS) for token in tokens[:-1]) + tokens[-1]
        lines.append(line + rng.choice(["", *SEPARATORS]))
    return lines + ["\u200b", " \u200b ", "\x85", "red cat \u200b runs big"]


@pytest.fixture(scope="module")
def tagger(tmp_path_factory) -> TokenizerPair:
    """A tagger's tokenizer and label set, trained on the toy corpus (tags: the upper-cased words)."""
    directory = tmp_path_factory.mktemp("tagger")
    src, tgt = write_corpus(directory, "train", 400, seed=1)
    tgt.write_text(
        "".join(" ".join(w.upper() for w in line.split()) + "\n" for line in src.read_text().splitlines())
    )
    return train_or_load_tokenizers(
        TokenizerConfig(vocab_size=60), file_corpora([src], [tgt]), directory / "tok", targets=TARGETS["tag"]
    )


def test_a_word_is_what_the_tokenizer_starts_one_at(tagger):
    words = tagger.src.words
    assert words("red cat \u200b runs big") == ["red", "cat", "runs", "big"]  # U+200B alone: no word
    assert words("red\u200bcat") == ["red", "cat"]  # SentencePiece reads U+200B as a space
    assert words("red\x85cat") == ["red\x85cat"]  # Python's whitespace, not SentencePiece's
    assert words(" \u3000red\tcat ") == ["red", "cat"]
    assert words("\x85") == words("\u200b") == words("") == []  # blank to Python, or no word at all
    assert len(words("red 猫 cat")) == 3  # an unknown character is still a word


def test_tags_out_are_words_in_for_training_and_translation(tagger, tmp_path):
    """The rule: for every line, the tags a tagger answers, the tags training accepts for it and the
    words `Tokenizer.words` finds are as many; training refuses one tag more, naming file and line."""
    lines = noisy_lines(300, seed=0)
    raw = tiny_config_dict(tmp_path)
    raw["model"] |= {"arch": "encoder_only", "task": "tag"}
    raw["train"]["best_metric"] = "accuracy"
    config = config_from_dict(raw)
    torch.manual_seed(0)
    model = build_model(config.model, tagger.src.vocab_size, tagger.tgt.vocab_size, tagger.src.word_starts())
    translator = Translator(model, tagger, config, torch.device("cpu"), None)
    answers = [t.texts[0].split() for t in translator.translate(lines, Request(SearchSettings(beam=1), 500))]
    counts = [len(tagger.src.words(line)) for line in lines]
    assert [len(tags) for tags in answers] == counts
    assert tagger.src.word_counts(lines) == counts
    assert (
        len({c for c, line in zip(counts, lines, strict=True) if c != len(line.split())}) > 1
    )  # Python counts otherwise

    src, tgt = tmp_path / "noisy.src", tmp_path / "noisy.tgt"
    src.write_text("".join(line.replace("\n", " ") + "\n" for line in lines), encoding="utf-8")
    tag_lines = [" ".join(tags) for tags in answers]
    tgt.write_text("".join(line + "\n" for line in tag_lines), encoding="utf-8")
    check_targets(TARGETS["tag"], src, tgt, tagger.src)  # what training checks before it builds the label set
    placed = tagger.labels.targets(tagger.src.encode(lines), tag_lines, tagger.src.word_starts())
    assert [sum(i != PAD for i in ids) for ids in placed] == counts  # what the loss learns from

    row = next(i for i, line in enumerate(lines) if "\u200b" in line and counts[i])
    tgt.write_text("".join(line + (" O" if i == row else "") + "\n" for i, line in enumerate(tag_lines)))
    with pytest.raises(
        DataError, match=rf"noisy\.tgt:{row + 1}: {counts[row] + 1} tags for the {counts[row]} words"
    ):
        check_targets(TARGETS["tag"], src, tgt, tagger.src)


def test_training_builds_the_label_set_only_from_tags_that_fit_the_words(tmp_path):
    """Through `train_or_load_tokenizers`, as `s2s train` calls it: a zero-width space is no word."""
    src, tgt = write_corpus(tmp_path, "train", 400, seed=1)
    lines = src.read_text().splitlines()
    tags = [" ".join("O" for _ in line.split()) for line in lines]
    src.write_text("\n".join([*lines, "red cat \u200b runs big"]) + "\n")
    cfg, directory = TokenizerConfig(vocab_size=60), tmp_path / "tok"
    tgt.write_text("\n".join([*tags, "O O O O O"]) + "\n")  # five, as Python splits the line
    with pytest.raises(DataError, match=rf"train\.tgt:{len(lines) + 1}: 5 tags for the 4 words"):
        train_or_load_tokenizers(cfg, file_corpora([src], [tgt]), directory, targets=TARGETS["tag"])
    assert not (directory / LABELS_FILE).exists()
    tgt.write_text("\n".join([*tags, "O O O O"]) + "\n")
    train_or_load_tokenizers(
        cfg, file_corpora([src], [tgt]), directory, targets=TARGETS["tag"]
    )  # the tokenizer is reused
    assert Labels.load(directory / LABELS_FILE).names == ("O",)


def test_a_tag_line_that_does_not_fit_its_source_names_file_and_line(tagger, tmp_path):
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text("red cat\nthe big dog\n")
    tgt.write_text("O O\nO O\n")
    with pytest.raises(DataError, match=r"t\.txt:2: 2 tags for the 3 words of .*s\.txt:2"):
        check_targets(TARGETS["tag"], src, tgt, tagger.src)
    check_targets(TARGETS["classify"], src, tgt, tagger.src)
