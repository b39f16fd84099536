"""A multilingual run's data: every source starts with its target language's token (one id, first,
before any corpus tag); the joint tokenizer reserves a token for every language and learns from a
sample balanced across languages; an epoch samples directions with the temperature. A bilingual
config is untouched: no language token, no language piece, the mixture it always had."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from seq2seq.config import Config, config_from_dict
from seq2seq.config.data import CorpusConfig, DataConfig, ValidConfig
from seq2seq.data.control import control_id, declared_tokens
from seq2seq.data.mixing import mixture_of
from seq2seq.data.prepared import corpus_mixture, ensure_prepared_corpus, load_prepared, prepared_corpus_dir
from seq2seq.data.tokenizer import load_tokenizers, tokenizer_checksums, train_or_load_tokenizers
from seq2seq.data.tokenizer_sample import expected_takes
from seq2seq.errors import ConfigError
from seq2seq.run.checks import data_checksums
from tests.conftest import tiny_config_dict, write_corpus


def multilingual(tmp_path: Path, **data: object) -> tuple[Config, Path]:
    """de->en, en->de (tagged <bt>) and fr->en from the tiny corpora; the tokenizer trained for it."""
    de, en = write_corpus(tmp_path, "de_en", 60, seed=1)
    fr, en_fr = write_corpus(tmp_path, "fr_en", 30, seed=2)
    raw = tiny_config_dict(tmp_path)
    valid = {
        "src": raw["data"]["valid_src"],
        "tgt": raw["data"]["valid_tgt"],
        "src_lang": "de",
        "tgt_lang": "en",
    }
    raw["data"] = {k: v for k, v in raw["data"].items() if not k.startswith(("train_", "valid_"))}
    raw["data"]["valid"] = [valid]
    raw["data"]["corpora"] = [
        {"name": "de_en", "src": str(de), "tgt": str(en), "src_lang": "de", "tgt_lang": "en"},
        {"name": "en_de", "src": str(en), "tgt": str(de), "src_lang": "en", "tgt_lang": "de", "tag": "<bt>"},
        {"name": "fr_en", "src": str(fr), "tgt": str(en_fr), "src_lang": "fr", "tgt_lang": "en"},
    ]
    raw["data"] |= data
    raw["tokenizer"]["control_tokens"] = ["<bt>"]
    cfg = config_from_dict(raw)
    train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok")
    return cfg, tmp_path / "tok"


def test_every_source_starts_with_its_target_language_token_then_its_tag(tmp_path):
    cfg, tok_dir = multilingual(tmp_path)
    tok = load_tokenizers(tok_dir, True).src
    assert declared_tokens(tok) == ["<bt>", "<2de>", "<2en>", "<2fr>"]  # declared first, then languages
    sums = tokenizer_checksums(tok_dir, True)
    ensure_prepared_corpus(cfg, tok_dir, data_checksums(cfg), sums, workers=1)
    data = load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())
    sources = data.batch(np.arange(len(data))).src.tolist()
    to_en, to_de, bt = control_id(tok, "<2en>"), control_id(tok, "<2de>"), control_id(tok, "<bt>")
    assert [row[:2] for row in sources[:60]] == [[to_en, row[1]] for row in sources[:60]]
    assert all(row[:2] == [to_de, bt] for row in sources[60:120])
    assert all(row[0] == to_en and bt not in row[1:] for row in sources[120:])
    controls = {to_en, to_de, bt, control_id(tok, "<2fr>")}
    assert all(not controls & set(row[2:]) for row in sources)  # one id each, never made from text
    assert not controls & set(tok.encode(["<2en> red <2de> cat <bt>"])[0])  # typed, it is plain text


def test_the_tokenizer_sample_gives_every_language_the_same_share(tmp_path):
    cfg, _ = multilingual(tmp_path)
    corpora = cfg.data.training_corpora()
    sides = [(c, side) for c in corpora for side in ("src", "tgt")]
    takes = expected_takes(sides, 10**6)
    lines = {c.name: n for c, n in zip(corpora, (60, 60, 30), strict=True)}
    by_language = Counter()
    for (corpus, side), take in zip(sides, takes, strict=True):
        by_language[corpus.src_lang if side == "src" else corpus.tgt_lang] += take * lines[corpus.name]
    total = sum(lines[c.name] for c, _ in sides)  # 300 lines: the sample's size when they all fit
    assert by_language == pytest.approx({code: total / 3 for code in ("de", "en", "fr")})
    capped = expected_takes(sides, 90)
    assert sum(t * lines[c.name] for (c, _), t in zip(sides, capped, strict=True)) == pytest.approx(90)


def test_an_epoch_samples_directions_with_the_temperature(tmp_path):
    corpora = [
        CorpusConfig(name="big", src="a", tgt="b", src_lang="de", tgt_lang="en"),
        CorpusConfig(name="big2", src="a", tgt="b", src_lang="de", tgt_lang="en", weight=2),
        CorpusConfig(name="small", src="a", tgt="b", src_lang="cs", tgt_lang="en"),
    ]
    manifests = {"big": {"pairs": 600}, "big2": {"pairs": 300}, "small": {"pairs": 100}}
    mass = {"de-en": 600 + 2 * 300, "cs-en": 100}
    for temperature in (1, 5):
        counts = corpus_mixture(manifests, corpora, temperature).counts()
        share = np.array([mass["de-en"], mass["cs-en"]], float) ** (1 / temperature)
        share = share / share.sum() * sum(mass.values())
        assert counts[0] + counts[1] == pytest.approx(share[0], abs=2)
        assert counts[2] == pytest.approx(share[1], abs=1)
        assert abs(counts[0] - counts[1]) <= 1  # within a direction by size x weight: 600 x 1, 300 x 2


def test_a_bilingual_config_gets_no_language_token_and_its_old_mixture(tmp_path):
    cfg = config_from_dict(tiny_config_dict(tmp_path))
    assert not cfg.data.multilingual and cfg.data.language_tokens() == []
    tok = train_or_load_tokenizers(cfg.tokenizer, cfg.data.training_corpora(), tmp_path / "tok").src
    assert declared_tokens(tok) == []
    corpora = (CorpusConfig(name="a", src="x", tgt="y", weight=2), CorpusConfig(name="b", src="x", tgt="y"))
    manifests = {"a": {"pairs": 50}, "b": {"pairs": 70}}
    ours, before = corpus_mixture(manifests, corpora), mixture_of("ab", (50, 70), (2, 1))
    assert ours.draw(3, 1).tolist() == before.draw(3, 1).tolist()


@pytest.mark.parametrize(
    "corpus, data, problem",
    [
        ({"tgt_lang": "en"}, {}, "data.corpora[0].src_lang: required"),
        ({"src_lang": "de", "tgt_lang": "English"}, {}, "'English' is not a language code"),
        ({}, {"temperature": 5.0}, "data.temperature: samples across the directions"),
        (
            {"src_lang": "de", "tgt_lang": "en"},
            {"temperature": 0.0},
            "data.temperature: must be in [0.01, 100]",
        ),
    ],
)
def test_a_multilingual_config_names_every_direction_in_codes(corpus, data, problem):
    corpora = (CorpusConfig(name="a", src="x", tgt="y", **corpus), CorpusConfig(name="b", src="x", tgt="y"))
    problems = DataConfig(corpora=corpora, valid_src="v", valid_tgt="w", **data).problems()
    assert any(problem in p for p in problems), problems


def test_a_language_token_cannot_also_be_declared():
    corpora = (CorpusConfig(name="a", src="x", tgt="y", src_lang="de", tgt_lang="en"),)
    valid = (ValidConfig(src="v", tgt="w", src_lang="de", tgt_lang="en"),)
    problems = DataConfig(corpora=corpora, valid=valid).problems(control_tokens=("<2en>",))
    assert problems == [
        "tokenizer.control_tokens: <2en> is a language token, which a multilingual run reserves itself: "
        "leave it out"
    ]


@pytest.mark.parametrize(
    "data, train, problem",
    [
        (
            {"valid_src": "v", "valid_tgt": "w"},
            {},
            "data.valid_src: a multilingual run validates each direction",
        ),
        (
            {"valid": [{"src": "v", "tgt": "w", "src_lang": "fr", "tgt_lang": "en"}]},
            {},
            "'fr' is not a language",
        ),
        ({"valid": [{"src": "v", "tgt": "w", "src_lang": "de"}]}, {}, "data.valid[0].tgt_lang: required"),
        (
            {"valid": [{"src": "v", "tgt": "w", "src_lang": "de", "tgt_lang": "en"}]},
            {"best_direction": "en-de"},
            "train.best_direction: 'en-de' is not a validated direction (de-en)",
        ),
    ],
)
def test_a_multilingual_run_validates_named_directions(tmp_path, data, train, problem):
    raw = tiny_config_dict(tmp_path)
    raw["data"] = {k: v for k, v in raw["data"].items() if not k.startswith(("train_", "valid_"))} | data
    raw["data"]["corpora"] = [{"name": "a", "src": "x", "tgt": "y", "src_lang": "de", "tgt_lang": "en"}]
    raw["train"] |= train
    with pytest.raises(ConfigError) as refused:
        config_from_dict(raw)
    assert problem in str(refused.value)


def test_a_bilingual_run_keeps_its_one_validation_pair():
    valid = (ValidConfig(src="v", tgt="w", src_lang="de", tgt_lang="en"),)
    bilingual = DataConfig(
        corpora=(CorpusConfig(name="a", src="x", tgt="y"),), valid_src="v", valid_tgt="w", valid=valid
    )
    assert any(
        "data.valid: validation sets by direction are a multilingual run's" in p for p in bilingual.problems()
    )
