"""Export a trained run for Hugging Face `transformers` (`s2s export RUN OUT --format huggingface`).

Which `transformers` class holds the run is chosen once, from its model section (`hf_layout`):

- **Pegasus** (`seq2seq.hf.pegasus`): a pre-norm encoder-decoder with one embedding matrix for both
  sides, s2s's recipes;
- **MarianMT** (`seq2seq.hf.marian_export`): a post-norm one with MarianMT's position layout
  (`model.positions: concatenated`), an imported OPUS-MT model before or after fine-tuning.

Other runs are refused, saying why. Both write MarianTokenizer's files and the model card; nothing
here imports `transformers`: the export needs only `safetensors` (`s2s[hf]`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Literal

from seq2seq.config import Config
from seq2seq.config.decode import RUN_DECODING, DecodeChoice
from seq2seq.errors import Seq2SeqError
from seq2seq.files import atomic_directory, check_new_directory
from seq2seq.hf.card import model_card
from seq2seq.hf.marian_export import write_marian
from seq2seq.hf.pegasus import write_model, write_text, write_tokenizer
from seq2seq.models.encoder_decoder import Seq2SeqTransformer
from seq2seq.models.family import export_refusal
from seq2seq.run.layout import RunDir
from seq2seq.translate.weights import load_weights

log = logging.getLogger(__name__)

Layout = Literal["pegasus", "marian"]  # the transformers class an export is written for


class HFExportError(Seq2SeqError):
    """A run Hugging Face's classes cannot reproduce, or a missing package."""


def hf_layout(config: Config, run_dir: Path) -> Layout:
    """The class that reproduces the run token for token, or an error saying why none does."""
    m = config.model
    if (why := export_refusal(m)) is not None:
        raise HFExportError(f"s2s export cannot write {run_dir}: {why}")
    if m.norm == "post":
        if m.positions != "concatenated":
            raise HFExportError(
                f"{run_dir} is post-norm: its Hugging Face layout (MarianMT) builds its positions in code, "
                "all sines then all cosines, and this run interleaves them (model.positions: interleaved), "
                "so no export of it can give s2s's output; export to ctranslate2"
            )
        return "marian"
    if not m.share_all_embeddings:
        raise HFExportError(
            f"{run_dir} has one embedding matrix per side; Pegasus's layout shares one "
            "(model.share_all_embeddings: true, as the recipes train), or export to ctranslate2"
        )
    return "pegasus"


def export_huggingface(
    run_dir: Path, checkpoint: str, out_dir: Path, decoding: DecodeChoice = RUN_DECODING
) -> None:
    """Write the run's `checkpoint` weights, tokenizer and model card to `out_dir` (new or empty) as
    `AutoModelForSeq2SeqLM` and `AutoTokenizer` load them, its generation defaults the run's decode
    config's (`decoding`'s where it has them); never half-written."""
    try:
        import safetensors.torch  # noqa: F401
    except ImportError:
        raise HFExportError("safetensors is not installed; install it with: pip install 's2s[hf]'") from None
    check_new_directory(out_dir)
    config = RunDir(run_dir).load_config()
    config = dataclasses.replace(config, decode=decoding.over(config.decode))
    layout = hf_layout(config, run_dir)
    weights = load_weights(run_dir, [checkpoint])
    model = weights.first
    assert isinstance(model, Seq2SeqTransformer)  # hf_layout's rule
    if config.decode.length_norm != "power":
        log.warning(
            "this run scores beams by %s; Hugging Face divides by length ** alpha (s2s's power rule): "
            "its beam search may choose other translations",
            config.decode.length_norm,
        )
    with atomic_directory(out_dir) as scratch:
        write = write_model if layout == "pegasus" else write_marian
        write(model, config.decode, scratch)
        write_tokenizer(weights.tokenizers, Path(run_dir) / "tokenizer", model.max_positions, scratch)
        write_text(scratch / "README.md", model_card(config, run_dir, weights.paths[0]))
    log.info("exported %s to %s for transformers (%s)", weights.paths[0], out_dir, layout)
