"""MarianMT out and back: a tiny random MarianMT model, imported into s2s and exported again with
`--format huggingface`, is a MarianMT model that `transformers` loads with no s2s code and that gives
the original's translations (greedy and beam) and log-probabilities, in s2s's ids; a post-norm run
whose positions MarianMT cannot build is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq.commands.import_model import import_model
from seq2seq.commands.jobs import ImportJob
from tests.helpers import run_cli
from tests.unit.hf.marian_models import SOURCE_LINES, TARGET_LINES, MarianKind, make_marian, transformers

LOGPROB_TOLERANCE = 1e-4  # |exported - original| of one token's log-probability, fp32
KINDS = [MarianKind(), MarianKind(activation="relu", share=False, tie=False, bias=False)]
SOURCES = [*SOURCE_LINES, "der Zug", "unbekannte Wörter xyz"]


@pytest.fixture(scope="module", params=KINDS, ids=[k.name for k in KINDS])
def both(request, tmp_path_factory) -> dict[str, tuple[object, object]]:
    """{"original": (model, tokenizer), "exported": (model, tokenizer)}, through an s2s run."""
    base = tmp_path_factory.mktemp("marian_out")
    directory = make_marian(base / "hf", request.param)
    import_model(ImportJob(directory, base / "run"))
    result = run_cli("export", str(base / "run"), str(base / "export"), "--format", "huggingface")
    assert result.exit_code == 0, result.output
    return {
        "original": (
            transformers.MarianMTModel.from_pretrained(directory).eval(),
            transformers.MarianTokenizer.from_pretrained(directory),
        ),
        "exported": (
            transformers.AutoModelForSeq2SeqLM.from_pretrained(base / "export").eval(),
            transformers.AutoTokenizer.from_pretrained(base / "export"),
        ),
    }


def translations(model, tokenizer, beams: int) -> list[str]:
    """Each source's translation under the same rules for both models: <pad> (and s2s's <s>, which
    the exported model's generation config suppresses) never written, </s> forced at 12 steps."""
    texts = []
    config = model.config
    for line in SOURCES:
        ids = tokenizer(line, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(
                input_ids=ids,
                num_beams=beams,
                do_sample=False,
                max_new_tokens=12,
                length_penalty=0.0,
                early_stopping="never",
                bad_words_ids=[[config.pad_token_id]],
                forced_eos_token_id=config.eos_token_id,
                min_new_tokens=1,
            )
        texts.append(tokenizer.decode(out[0], skip_special_tokens=True))
    return texts


@pytest.mark.parametrize("beams", [1, 4])
def test_the_exported_model_translates_as_the_original(both, beams):
    original, exported = (translations(*both[name], beams) for name in ("original", "exported"))
    assert exported == original
    assert len(set(original)) > 1, "every source gave one output: the test shows little"


def test_the_exported_model_scores_each_token_as_the_original(both):
    """Teacher-forced log-probabilities of the reference pieces, </s> included, per token."""
    scores = []
    for model, tokenizer in both.values():
        batch = tokenizer(SOURCES[:6], text_target=TARGET_LINES, return_tensors="pt", padding=True)
        labels = batch.pop("labels")
        pad_id = model.config.pad_token_id
        with torch.no_grad():
            logits = model(**batch, labels=labels).logits
        logits[..., pad_id] = float("-inf")  # the rule both generate under: <pad> never written
        real = labels != pad_id
        picked = (
            logits.log_softmax(-1).gather(-1, labels.clamp(max=logits.size(-1) - 1)[..., None]).squeeze(-1)
        )
        scores.append(picked.masked_fill(~real, 0.0))
    original, exported = scores
    assert original.shape == exported.shape
    assert (original - exported).abs().max() <= LOGPROB_TOLERANCE


def test_a_post_norm_run_with_interleaved_positions_is_refused(tmp_path: Path):
    import_model(ImportJob(make_marian(tmp_path / "hf", MarianKind()), tmp_path / "run"))
    config = tmp_path / "run" / "config.yaml"
    config.write_text(config.read_text().replace("positions: concatenated", "positions: interleaved"))
    result = run_cli("export", str(tmp_path / "run"), str(tmp_path / "export"), "--format", "huggingface")
    assert result.exit_code == 2 and "all sines then all cosines" in result.output
    assert not (tmp_path / "export").exists()
