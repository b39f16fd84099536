"""A right-to-left run (model.right_to_left) trains and validates on each target written last piece
first, from the same prepared corpus a left-to-right run reads: what the trainer lays out is the
reading order reversed, and the stored corpus stays in reading order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from seq2seq.config import config_from_dict
from seq2seq.data.prepared import load_prepared, prepared_corpus_dir
from seq2seq.data.token_arrays import TokenArrays
from seq2seq.data.tokenizer import load_tokenizers
from seq2seq.special import BOS
from tests.conftest import tiny_config_dict
from tests.helpers import run_cli


def test_every_target_the_trainer_reads_is_laid_out_last_piece_first(tmp_path: Path, monkeypatch) -> None:
    raw = tiny_config_dict(tmp_path, max_steps=6, valid_every=3)
    raw["model"]["right_to_left"] = True
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    laid_out: list[bool] = []  # `reverse` of each decoder input laid out (<bos> first)
    padded = TokenArrays.padded

    def spied(self: TokenArrays, rows: np.ndarray, first, last, reverse: bool = False):  # type: ignore[no-untyped-def]
        if first == BOS:
            laid_out.append(reverse)
        return padded(self, rows, first, last, reverse)

    monkeypatch.setattr(TokenArrays, "padded", spied)
    result = run_cli("train", str(config))
    assert result.exit_code == 0, result.output
    assert len(laid_out) >= 6 and all(laid_out)  # training batches and validation's, every one
    cfg = config_from_dict(raw)
    stored = load_prepared(prepared_corpus_dir(cfg), cfg.data.training_corpora())
    line = Path(raw["data"]["train_tgt"]).read_text(encoding="utf-8").splitlines()[0]
    tokenizer = load_tokenizers(Path(raw["run_dir"]) / "tokenizer", True).tgt
    assert stored.tgt.sequences([0])[0] == tokenizer.encode([line])[0]  # kept in reading order
