"""MarianMT import: a tiny random MarianMT model, imported, gives transformers' own answers: the same
source ids (through s2s's rewritten tokenizers), the same greedy tokens and the same teacher-forced
log-probabilities, and under aligned rules the same beam search, for tied and untied embeddings,
swish, relu and gelu, with and without a bias."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from seq2seq.batching import pad
from seq2seq.commands.import_model import import_model
from seq2seq.commands.jobs import ImportJob
from seq2seq.decoding.forced_scores import forced_log_probs
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.hf.marian_vocab import MarianImportError
from seq2seq.models.layers import sinusoidal_positions
from seq2seq.special import EOS
from seq2seq.translate.weights import load_weights
from tests.helpers import cli_translate, run_cli
from tests.unit.hf.marian_models import SOURCE_LINES, TARGET_LINES, MarianKind, make_marian, transformers

LOGPROB_TOLERANCE = 1e-4  # |s2s - transformers| of one token's log-probability, fp32
KINDS = [
    MarianKind(),
    MarianKind(activation="relu", bias=False),
    MarianKind(activation="relu", share=False, tie=False),
    MarianKind(activation="gelu", share=False, tie=True, bias=False),
    MarianKind(activation="swish", share=True, tie=False),
]
SOURCES = [*SOURCE_LINES, "der Zug", "unbekannte Wörter xyz", "Hund"]  # a piece MarianMT reads as <unk>


@pytest.fixture(scope="module", params=KINDS, ids=[k.name for k in KINDS])
def imported(request, tmp_path_factory) -> tuple[object, object, object, list[int]]:
    """(s2s's weights of the imported run, transformers' model, its tokenizer, vocab's row of each s2s
    target id)."""
    base = tmp_path_factory.mktemp("marian")
    directory = make_marian(base / "hf", request.param)
    import_model(ImportJob(directory, base / "run"))
    theirs = transformers.MarianMTModel.from_pretrained(directory).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(directory)
    ours = load_weights(base / "run")
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    tgt = ours.tokenizers.tgt_tokenizer
    rows = [vocab.get(p, vocab["<unk>"]) for p in tgt.id_pieces(range(tgt.vocab_size))]
    return ours, theirs, tokenizer, rows


def source_batches(ours, tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """The sources as s2s encodes them and as MarianTokenizer does: (B, S) each."""
    src = pad([[*ids, EOS] for ids in ours.tokenizers.src.encode(SOURCES)])
    theirs = tokenizer(SOURCES, return_tensors="pt", padding=True).input_ids
    return src, theirs


def test_the_rewritten_tokenizers_give_marians_ids(imported):
    """Each s2s source id reads the row MarianTokenizer's id names (`<unk>` for a piece not in the
    vocabulary); the target side has every vocabulary entry."""
    ours, _, tokenizer, rows = imported
    src, theirs = source_batches(ours, tokenizer)
    model = ours.first
    assert src.shape == theirs.shape
    assert torch.equal(model.src_embed.tokens.weight[src], theirs_rows(imported, theirs))
    assert set(rows) == set(tokenizer.get_vocab().values())


def theirs_rows(imported, ids: torch.Tensor) -> torch.Tensor:
    _, theirs, _, _ = imported
    return theirs.get_encoder().embed_tokens.weight[ids]


def test_greedy_tokens_are_transformers_greedy_tokens(imported):
    ours, theirs, tokenizer, rows = imported
    src, their_src = source_batches(ours, tokenizer)
    settings = SearchSettings(beam=1, length_penalty=0.0)
    found = greedy_search(ours.first, src, settings)
    limits = max_output_lengths(src, settings, ours.first.max_positions).tolist()
    pad_id = theirs.config.pad_token_id
    for i, (hypothesis,) in enumerate(found):
        with torch.no_grad():
            out = theirs.generate(
                input_ids=their_src[i : i + 1][:, their_src[i] != pad_id],
                num_beams=1,
                do_sample=False,
                max_new_tokens=limits[i],  # both force </s> at the last step (forced_eos_token_id)
                bad_words_ids=[[pad_id]],  # MarianMT never writes <pad>; s2s never writes <pad> or <s>
                min_new_tokens=settings.min_len,  # s2s writes no empty translation
            )
        steps = out[0, 1:].tolist()
        tokens = steps[: steps.index(0)] if 0 in steps else steps  # </s> is MarianMT's 0
        assert [rows[t] for t in hypothesis.tokens] == tokens, SOURCES[i]
    assert len({tuple(h.tokens) for (h,) in found}) > 1, "every source gave one output: the test shows little"


def test_beam_search_finds_what_transformers_finds_and_scores_it_alike(imported):
    """Both ranking by summed log-probabilities (under a length normalization, a hypothesis cut at
    the length limit is one step longer for transformers than for s2s), no empty translation, <pad>
    forbidden and the rest renormalized: most translations agree, and where both found the same
    tokens they give one score. Their rules for when a beam search ends differ (`generate` with
    early_stopping "never", s2s's patience), so where they do not agree either may be the better."""
    ours, theirs, tokenizer, rows = imported
    src, their_src = source_batches(ours, tokenizer)
    settings = SearchSettings(beam=4, length_penalty=0.0, max_len_a=0.5, max_len_b=3, patience=16.0)
    found = beam_search(ours.first, src, settings)
    limits = max_output_lengths(src, settings, ours.first.max_positions).tolist()
    pad_id, same = theirs.config.pad_token_id, 0
    for i, (mine,) in enumerate(found):
        with torch.no_grad():
            out = theirs.generate(
                input_ids=their_src[i : i + 1][:, their_src[i] != pad_id],
                num_beams=4,
                max_new_tokens=limits[i],
                length_penalty=0.0,
                early_stopping="never",
                bad_words_ids=[[pad_id]],
                min_new_tokens=settings.min_len,
                renormalize_logits=True,
                output_scores=True,
                return_dict_in_generate=True,
            )
        steps = out.sequences[0, 1:].tolist()
        tokens = steps[: steps.index(0)] if 0 in steps else steps
        score = float(out.sequences_scores[0])
        if [rows[t] for t in mine.tokens] == tokens:
            same += 1
            assert mine.score == pytest.approx(score, abs=LOGPROB_TOLERANCE), SOURCES[i]
    assert same >= len(SOURCES) // 2, f"only {same} of {len(SOURCES)} translations agree"


def test_teacher_forced_log_probabilities_are_transformers(imported):
    """Per token, </s> included, within LOGPROB_TOLERANCE: MarianMT's softmax with <pad> forbidden (its
    generation's rule) against s2s's with <pad> and <s> forbidden."""
    ours, theirs, tokenizer, rows = imported
    src, their_src = source_batches(ours, tokenizer)
    targets = ours.tokenizers.tgt_tokenizer.encode(TARGET_LINES + TARGET_LINES[:3])
    got = forced_log_probs(ours.first, src, targets, min_len=0)  # (B, T)
    pad_id = theirs.config.pad_token_id
    labels = torch.nn.utils.rnn.pad_sequence(  # (B, T), </s> = 0
        [torch.tensor([*(rows[t] for t in ids), 0]) for ids in targets],
        batch_first=True,
        padding_value=pad_id,
    )
    start = torch.full((labels.size(0), 1), pad_id)
    with torch.no_grad():
        logits = theirs(
            input_ids=their_src,
            attention_mask=(their_src != pad_id).long(),
            decoder_input_ids=torch.cat([start, labels[:, :-1]], dim=1),
        ).logits
    logits[..., pad_id] = float("-inf")
    expected = logits.log_softmax(-1).gather(-1, labels.clamp(max=pad_id - 1)[..., None]).squeeze(-1)
    expected = expected.masked_fill(labels == pad_id, 0.0)
    assert got.shape == expected.shape
    assert (got - expected).abs().max() <= LOGPROB_TOLERANCE


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "bart"}, "model_type 'bart'.*MarianMT"),
        ({"activation_function": "tanh"}, "activation_function 'tanh'; s2s has relu, swish"),
        ({"scale_embedding": False}, "scale_embedding is false"),
        ({"decoder_attention_heads": 4}, "attention heads differ"),
        ({"normalize_embedding": True}, "normalize_embedding is true"),
    ],
)
def test_what_s2s_cannot_reproduce_is_refused_saying_what(tmp_path: Path, change: dict, message: str):
    directory = make_marian(tmp_path / "hf", MarianKind())
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    (directory / "config.json").write_text(json.dumps({**config, **change}), encoding="utf-8")
    with pytest.raises(MarianImportError, match=message):
        import_model(ImportJob(directory, tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_the_run_decodes_with_the_models_beam(tmp_path: Path):
    directory = make_marian(tmp_path / "hf", MarianKind())
    generation = json.loads((directory / "generation_config.json").read_text(encoding="utf-8"))
    (directory / "generation_config.json").write_text(json.dumps({**generation, "num_beams": 4}))
    import_model(ImportJob(directory, tmp_path / "run"))
    assert load_weights(tmp_path / "run").config.decode.beam == 4


def test_a_pickled_state_dict_is_read_without_running_code(tmp_path: Path):
    """pytorch_model.bin, read with weights_only: the same run as from model.safetensors."""
    from safetensors.torch import load_file

    directory = make_marian(tmp_path / "hf", MarianKind(activation="relu"))
    torch.save(load_file(str(directory / "model.safetensors")), directory / "pytorch_model.bin")
    import_model(ImportJob(directory, tmp_path / "from_safetensors"))
    (directory / "model.safetensors").unlink()
    import_model(ImportJob(directory, tmp_path / "from_bin"))
    a, b = (load_weights(tmp_path / name).first.state_dict() for name in ("from_safetensors", "from_bin"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_cli_imports_a_model_that_translate_reads_and_refuses_another_architecture(tmp_path: Path):
    """`s2s import` then `s2s translate`: one line out per line in; a BART directory exits 2."""
    directory = make_marian(tmp_path / "hf", MarianKind())
    result = run_cli("import", str(directory), str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    lines = ["der Hund", "die Katze schläft", "Wetter"]
    assert len(cli_translate(tmp_path / "run", lines, "--beam", "2")) == len(lines)
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    (directory / "config.json").write_text(json.dumps({**config, "model_type": "bart"}), encoding="utf-8")
    refused = run_cli("import", str(directory), str(tmp_path / "other"))
    assert refused.exit_code == 2
    assert "error:" in refused.stderr and "marian" in refused.stderr


@pytest.mark.parametrize(
    "kind", [MarianKind(), MarianKind(activation="relu", share=False, tie=False)], ids=lambda k: k.name
)
def test_a_ctranslate2_export_of_an_imported_run_translates_as_s2s(tmp_path: Path, kind: MarianKind):
    """CTranslate2 takes the options an import sets (swish, the concatenated table, the logits bias):
    in fp32, its greedy translations are s2s's."""
    pytest.importorskip("ctranslate2")
    import_model(ImportJob(make_marian(tmp_path / "hf", kind), tmp_path / "run"))
    result = run_cli("export", str(tmp_path / "run"), str(tmp_path / "ct2"))
    assert result.exit_code == 0, result.output
    ours = cli_translate(tmp_path / "run", SOURCES, "--beam", "1", "--precision", "fp32")
    theirs = cli_translate(
        tmp_path / "ct2", SOURCES, "--beam", "1", "--engine", "ctranslate2", "--quantize", "float32"
    )
    assert ours == theirs
    assert len(set(ours)) > 1, "every source gave one translation: the test shows little"


def test_marians_position_table_is_the_concatenated_one(imported):
    """transformers' own table (`MarianSinusoidalPositionalEmbedding`) is s2s's `concatenated` layout;
    a table stored with the weights is checked against it."""
    ours, theirs, _, _ = imported
    table = theirs.get_encoder().embed_positions.weight
    assert ours.config.model.positions == "concatenated"
    assert_close(ours.first.src_embed.positions[: table.size(0)], table, atol=1e-5, rtol=0)


def test_a_stored_position_table_of_another_layout_is_refused(tmp_path: Path):
    from safetensors.torch import load_file, save_file

    directory = make_marian(tmp_path / "hf", MarianKind())
    weights = load_file(str(directory / "model.safetensors"))
    for layout, refused in (("concatenated", False), ("interleaved", True)):
        table = sinusoidal_positions(64, 16, layout)
        save_file(
            {**weights, "model.encoder.embed_positions.weight": table}, str(directory / "model.safetensors")
        )
        if refused:
            with pytest.raises(MarianImportError, match="learned positions are not supported"):
                import_model(ImportJob(directory, tmp_path / layout))
        else:
            import_model(ImportJob(directory, tmp_path / layout))


def test_a_multilingual_models_language_token_is_one_piece_as_in_marian(tmp_path: Path, caplog):
    """`>>fra<<` and a space at a line's start read as MarianTokenizer reads them: one id, then the
    line's pieces."""
    directory = make_marian(tmp_path / "hf", MarianKind())
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    vocab[">>fra<<"] = vocab.pop("lä")  # a source piece's id given to the token: MarianMT reads lä as <unk>
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with caplog.at_level("WARNING", logger="seq2seq"):
        import_model(ImportJob(directory, tmp_path / "run"))
    assert ">>fra<<" in caplog.text and "multilingual" in caplog.text
    ours = load_weights(tmp_path / "run")
    theirs = transformers.MarianMTModel.from_pretrained(directory)
    lines = [">>fra<< der Hund läuft", ">>fra<<  die Katze", "der Hund"]
    src = pad([[*ids, EOS] for ids in ours.tokenizers.src.encode(lines)])
    their_ids = transformers.MarianTokenizer.from_pretrained(directory)(lines, padding=True).input_ids
    assert src.shape == (len(lines), len(their_ids[0]))
    ours_rows = ours.first.src_embed.tokens.weight[src]
    assert torch.equal(ours_rows, theirs.get_encoder().embed_tokens.weight[torch.tensor(their_ids)])


def test_a_vocabulary_larger_than_the_weights_is_refused(tmp_path: Path):
    directory = make_marian(tmp_path / "hf", MarianKind())
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    (directory / "vocab.json").write_text(json.dumps({**vocab, "▁extra": len(vocab)}), encoding="utf-8")
    with pytest.raises(MarianImportError, match="vocab.json does not belong to these weights"):
        import_model(ImportJob(directory, tmp_path / "run"))
