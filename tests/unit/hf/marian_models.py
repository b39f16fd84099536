"""Tiny random MarianMT models, made with `transformers` in the test: two SentencePiece models trained
on a few lines, a joint vocab.json as MarianMT's conversion writes one (`</s>` 0, `<unk>` 1, `<pad>`
last), a `MarianMTModel` of random weights saved with `save_pretrained`."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import sentencepiece as spm
import torch

transformers = pytest.importorskip("transformers", reason="transformers is an optional extra: s2s[hf]")

SOURCE_LINES = [
    "der Hund läuft schnell über die Straße",
    "die Katze schläft auf dem warmen Sofa",
    "ein kleines Kind spielt im Garten",
    "wir fahren morgen mit dem Zug nach Berlin",
    "das Wetter ist heute sehr schön",
    "meine Schwester liest gern alte Bücher",
]
TARGET_LINES = [
    "the dog runs quickly across the street",
    "the cat sleeps on the warm sofa",
    "a small child plays in the garden",
    "tomorrow we take the train to Berlin",
    "the weather is very nice today",
    "my sister likes to read old books",
]
DROPPED = "▁Zug"  # a source piece left out of vocab.json: MarianMT reads it as <unk>


@dataclass(frozen=True)
class MarianKind:
    """What a tiny MarianMT model varies in."""

    activation: str = "swish"
    share: bool = True  # share_encoder_decoder_embeddings: one table for both sides
    tie: bool = True  # tie_word_embeddings: the output projection is the target embedding
    bias: bool = True  # a random (nonzero) final_logits_bias

    @property
    def name(self) -> str:
        return (
            f"{self.activation}-{'shared' if self.share else 'two tables'}-"
            f"{'tied' if self.tie else 'untied'}-{'bias' if self.bias else 'no bias'}"
        )


def train_spm(lines: list[str], size: int) -> bytes:
    """A unigram SentencePiece model with SentencePiece's default ids, as MarianMT's are made."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines * 4),
        model_writer=out,
        vocab_size=size,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return out.getvalue()


def make_marian(directory: Path, kind: MarianKind, seed: int = 0) -> Path:
    """A tiny random MarianMT model of `kind` saved in `directory`, with its tokenizer files."""
    directory.mkdir(parents=True, exist_ok=True)
    models = {"source.spm": train_spm(SOURCE_LINES, 60), "target.spm": train_spm(TARGET_LINES, 60)}
    pieces: list[str] = []
    for name, model in models.items():
        (directory / name).write_bytes(model)
        sp = spm.SentencePieceProcessor(model_proto=model)
        pieces += [sp.id_to_piece(i) for i in range(3, sp.get_piece_size())]  # after unk, bos, eos
    ordered = [p for p in dict.fromkeys(pieces) if p != DROPPED]
    vocab = {piece: i for i, piece in enumerate(["</s>", "<unk>", *ordered, "<pad>"])}
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"source_lang": "de", "target_lang": "en", "separate_vocabs": False}), encoding="utf-8"
    )
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        d_model=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=64,
        activation_function=kind.activation,
        share_encoder_decoder_embeddings=kind.share,
        tie_word_embeddings=kind.tie,
        pad_token_id=len(vocab) - 1,
        eos_token_id=0,
        decoder_start_token_id=len(vocab) - 1,
        scale_embedding=True,
    )
    torch.manual_seed(seed)
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():  # weights far from the tiny initial ones: clear choices, varied outputs
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            if name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
            else:
                p.normal_(0.0, 0.1 if name.endswith("bias") else 0.5)
        model.get_output_embeddings().weight[0] *= 6  # </s> often likely: translations of many lengths
        if kind.bias:
            model.final_logits_bias.normal_(0.0, 1.0)
    model.save_pretrained(directory)
    return directory
