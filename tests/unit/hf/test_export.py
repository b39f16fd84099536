"""Hugging Face export: `transformers` loads it with no s2s code, and its `generate` gives s2s's
tokens and log-probabilities under the same rules (forbidden tokens, minimum length, each
sentence's limit, the power length normalization), on trained and under-trained weights."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq.batching import pad
from seq2seq.config import DecodeConfig, ModelConfig
from seq2seq.data.textio import read_lines
from seq2seq.decoding.hypothesis import Hypothesis
from seq2seq.decoding.length_limits import max_output_lengths
from seq2seq.decoding.search import beam_search, greedy_search
from seq2seq.decoding.settings import SearchSettings
from seq2seq.models.build import build_model
from seq2seq.run.layout import RunDir
from seq2seq.special import BOS, EOS, PAD
from seq2seq.translate.direction import Direction
from seq2seq.translate.placement import Placement
from seq2seq.translate.translator import Translator
from tests.conftest import TrainedRun
from tests.helpers import cli_translate, run_cli
from tests.system.cuda_helpers import assert_same_greedy, greedy_margins

transformers = pytest.importorskip("transformers", reason="transformers is an optional extra: s2s[hf]")
from seq2seq.hf.pegasus import write_model, write_tokenizer  # noqa: E402

MARGIN = 1e-3  # a best choice ahead of its runner-up by less than this may flip with the kernels' rounding
SCORE_TOLERANCE = 1e-4  # |s2s - transformers| of a sentence's score, fp32
GREEDY_SETTINGS = [
    SearchSettings(beam=1),  # each sentence's own limit: 1.5 x source tokens + 10
    SearchSettings(beam=1, min_len=3),
]  # short limits: the beam test


def generate(model: object, sources: list[list[int]], settings: SearchSettings, limits: list[int]) -> list:
    """`generate` on the sources (ids, </s> last) under s2s's `settings`, each cut at its own limit
    (one call per limit: `generate` takes one): one `Hypothesis` per source, its score as `generate`
    gives it (greedy: the summed log-probabilities; beam: over length ** alpha)."""
    found: list[list[Hypothesis]] = [[] for _ in sources]
    for limit in sorted(set(limits)):
        rows = [i for i, row_limit in enumerate(limits) if row_limit == limit]
        batch = pad([sources[i] for i in rows])
        with torch.no_grad():
            out = model.generate(
                input_ids=batch,
                attention_mask=(batch != PAD).long(),
                num_beams=settings.beam,
                do_sample=False,
                max_new_tokens=limit - 1,  # s2s's limit counts the </s> it forces at the last step
                min_new_tokens=settings.min_len,
                length_penalty=settings.length_penalty,
                output_scores=True,
                return_dict_in_generate=True,
            )
        for j, i in enumerate(rows):
            steps = out.sequences[j, 1:].tolist()  # after the decoder's <s>
            tokens = steps[: steps.index(EOS)] if EOS in steps else steps
            if settings.beam == 1:
                score = sum(
                    float(out.scores[t][j, token]) for t, token in enumerate(steps[: len(tokens) + 1])
                )
            else:
                score = float(out.sequences_scores[j])
            found[i] = [Hypothesis(tokens, score)]
    return found


@pytest.fixture(scope="module")
def under_trained(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> Callable:
    """`under_trained(kind)`: (s2s model, the transformers model of its export, the tokenizers) for
    the 12-step tiny run (its outputs run to the length limit) or random pre-norm weights whose
    <pad>, <bos> and </s> are often the first choice (what s2s's search forbids or limits)."""
    run = trained_run("tiny").run
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    made = {}

    def get(kind: str) -> tuple[torch.nn.Module, object, object]:
        if kind not in made:
            directory = tmp_path_factory.mktemp("hf_" + kind.replace(" ", "_"))
            model = ours.model
            if kind == "random pre-norm":
                cfg = ModelConfig(
                    d_model=32, heads=4, ffn_dim=48, encoder_layers=2, decoder_layers=2, norm="pre"
                )
                torch.manual_seed(0)
                vocab = ours.tokenizers.tgt.vocab_size
                model = build_model(cfg, vocab, vocab).eval()
                with torch.no_grad():  # output and embedding weights are tied: larger rows, larger logits
                    model.output.weight[[PAD, BOS]] *= 2
                    model.output.weight[EOS] *= 4
            write_model(model, DecodeConfig(), directory)
            write_tokenizer(ours.tokenizers, run / "tokenizer", model.max_positions, directory)
            theirs = transformers.AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
            made[kind] = model, theirs, ours.tokenizers
        return made[kind]

    return get


def sources_of(tiny_run: TrainedRun, tokenizers: object) -> tuple[list[str], list[list[int]]]:
    lines = read_lines(tiny_run.data / "valid.src") + read_lines(tiny_run.data / "train.src")[:16]
    return lines, [[*ids, EOS] for ids in tokenizers.src.encode(lines)]


@pytest.mark.slow
@pytest.mark.parametrize("settings", GREEDY_SETTINGS, ids=["limits", "min_len"])
@pytest.mark.parametrize("kind", ["tiny run", "random pre-norm"])
def test_greedy_generate_of_the_export_is_s2s_greedy_search(under_trained, tiny_run, kind, settings):
    """The same tokens wherever s2s's top two choices differ by MARGIN or more, and where they all do,
    the same summed log-probability within SCORE_TOLERANCE."""
    model, theirs, tokenizers = under_trained(kind)
    _, sources = sources_of(tiny_run, tokenizers)
    src = pad(sources)
    ours = greedy_search(model, src, settings)
    limits = max_output_lengths(src, settings, model.max_positions).tolist()
    got = generate(theirs, sources, settings, limits)
    unnormalized = dataclasses.replace(settings, length_penalty=0.0)  # generate's greedy scores are sums
    ours_summed = greedy_search(model, src, unnormalized)
    assert [h.tokens for (h,) in ours_summed] == [h.tokens for (h,) in ours]
    clear = assert_same_greedy(
        ours_summed, got, greedy_margins(model, src, ours, settings), MARGIN, SCORE_TOLERANCE
    )
    assert clear >= len(sources) // 2, f"only {clear} sentences without a close call: the test shows little"


@pytest.mark.parametrize("kind", ["tiny run", "random pre-norm"])
def test_beam_generate_finds_what_s2s_finds_or_better_and_scores_it_alike(under_trained, tiny_run, kind):
    """Under the power rule both score a hypothesis alike; `generate` (early_stopping "never") stops
    no earlier than s2s, so its best is never worse, and where both found the same tokens they give
    one score (s2s searching as long as its patience allows)."""
    model, theirs, tokenizers = under_trained(kind)
    _, sources = sources_of(tiny_run, tokenizers)
    src = pad(sources)
    settings = SearchSettings(
        beam=5, nbest=1, length_norm="power", length_penalty=1.0, max_len_a=0.5, max_len_b=3, patience=16.0
    )
    ours = beam_search(model, src, settings)
    got = generate(theirs, sources, settings, max_output_lengths(src, settings, model.max_positions).tolist())
    same = 0
    for (mine,), (found,) in zip(ours, got, strict=True):
        assert found.score >= mine.score - SCORE_TOLERANCE, (mine, found)
        if mine.tokens == found.tokens:
            same += 1
            assert mine.score == pytest.approx(found.score, abs=SCORE_TOLERANCE)
    assert same >= len(sources) // 2, f"only {same} of {len(sources)} translations agree"


@pytest.fixture(scope="module")
def exported(trained_run: Callable[[str], TrainedRun], tmp_path_factory) -> tuple[Path, Path]:
    """The shared "confident" run (greedy choices with clear margins) and its export, by the CLI."""
    run = trained_run("confident").run
    export = tmp_path_factory.mktemp("hf") / "export"
    result = run_cli("export", str(run), str(export), "--format", "huggingface")
    assert result.exit_code == 0, result.output
    return run, export


def test_the_export_loads_with_auto_classes_and_translates_text_as_s2s_does(exported):
    """AutoTokenizer and AutoModelForSeq2SeqLM from the directory alone: the same lines as `s2s translate`
    (greedy and beam 5, each line under s2s's limit for it; s2s searching as long as its patience
    allows, since `generate` stops only when no live beam can still win)."""
    run, export = exported
    tokenizer = transformers.AutoTokenizer.from_pretrained(export)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(export).eval()
    assert type(model).__name__ == "PegasusForConditionalGeneration"
    lines = read_lines(run.parent / "data" / "valid.src")[:10] + [
        "red cat",
        "the small bird sleeps on a tree",
    ]
    ours = Translator.load(run, ["best"], Placement("cpu", "fp32"))
    assert [tokenizer(line)["input_ids"] for line in lines] == [
        [*ids, EOS] for ids in ours.tokenizers.src.encode(lines)
    ]
    for beam in (1, 5):
        expected = cli_translate(run, lines, "--beam", str(beam), "--precision", "fp32", "--patience", "16")
        settings = SearchSettings(beam=beam)
        texts = []
        for line in lines:
            batch = tokenizer([line], return_tensors="pt")
            limit = max_output_lengths(batch["input_ids"], settings, ours.max_source_tokens).item()
            with torch.no_grad():
                out = model.generate(**batch, num_beams=beam, max_new_tokens=limit - 1)
            texts.append(tokenizer.decode(out[0], skip_special_tokens=True))
        assert texts == expected and any(expected), f"beam {beam}"


def test_the_export_holds_what_it_says(exported):
    run, export = exported
    names = {p.name for p in export.iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "README.md", "vocab.json"} <= names
    assert {"source.spm", "target.spm", "tokenizer_config.json"} <= names
    generation = json.loads((export / "generation_config.json").read_text(encoding="utf-8"))
    decode = RunDir(run).load_config().decode
    assert (generation["num_beams"], generation["length_penalty"]) == (decode.beam, decode.length_penalty)
    assert generation["suppress_tokens"] == [PAD, BOS] and generation["forced_eos_token_id"] is None
    card = (export / "README.md").read_text(encoding="utf-8")
    assert "from_pretrained" in card and "train.src" in card and "validation BLEU" in card
    assert "nrefs:1|case:mixed" in card  # the score's sacreBLEU signature


def test_a_beam_and_length_penalty_given_to_export_are_its_generation_defaults(tiny_run, tmp_path):
    export = tmp_path / "export"
    asked = ("--beam", "3", "--length-penalty", "0.7")
    result = run_cli("export", str(tiny_run.run), str(export), "--format", "huggingface", *asked)
    assert result.exit_code == 0, result.output
    generation = json.loads((export / "generation_config.json").read_text(encoding="utf-8"))
    assert (generation["num_beams"], generation["length_penalty"]) == (3, 0.7)
    assert "beam 3, length penalty\n0.7" in (export / "README.md").read_text(encoding="utf-8")
    assert RunDir(tiny_run.run).load_config().decode.beam != 3  # the run's own are the run's


def test_a_multilingual_export_reads_the_language_token_as_one_id(multilingual_run, tmp_path):
    export = tmp_path / "export"
    result = run_cli("export", str(multilingual_run.run), str(export), "--format", "huggingface")
    assert result.exit_code == 0, result.output
    tokenizer = transformers.AutoTokenizer.from_pretrained(export)
    ours = Translator.load(multilingual_run.run, ["best"], Placement("cpu", "fp32"))
    lines = read_lines(multilingual_run.data / "valid.src")[:6]
    for to in ("de", "en"):
        prefix = ours.source_tokens.prefix(Direction(to))
        expected = [[*prefix, *ids, EOS] for ids in ours.tokenizers.src.encode(lines)]
        assert [tokenizer(f"<2{to}> {line}")["input_ids"] for line in lines] == expected


@pytest.mark.parametrize(
    "kind, message",
    [
        (
            "decoder_only",
            "a decoder_only model; CTranslate2 and Hugging Face take encoder-decoder models only",
        ),
        ("post_norm", "is post-norm: its Hugging Face layout (MarianMT) builds its positions in code"),
    ],
)
def test_a_run_no_transformers_class_reproduces_is_refused_and_nothing_is_written(
    trained_run, run_copy, tmp_path, kind, message
):
    if kind == "post_norm":
        config = run_copy.run / "config.yaml"
        config.write_text(
            config.read_text(encoding="utf-8").replace("norm: pre", "norm: post"), encoding="utf-8"
        )
        run = run_copy.run
    else:
        run = trained_run(kind).run
    export = tmp_path / "export"
    refused = run_cli("export", str(run), str(export), "--format", "huggingface")
    assert refused.exit_code == 2 and message in refused.output
    assert not export.exists() and not list(tmp_path.glob(".export*"))


def test_quantize_is_refused_for_a_huggingface_export(tiny_run, tmp_path):
    refused = run_cli(
        "export", str(tiny_run.run), str(tmp_path / "out"), "--format", "huggingface", "--quantize", "int8"
    )
    assert refused.exit_code == 2 and "--quantize is for --format ctranslate2" in refused.output
    assert not (tmp_path / "out").exists()
