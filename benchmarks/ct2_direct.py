"""CTranslate2 called directly, on SentencePiece pieces: what the engines section measures s2s's
engines against (engines.py), with s2s's per-sentence length limits (one `translate_batch` per limit,
all submitted at once) and the run's decode settings. Its worker imports no torch, as a program
calling CTranslate2 has none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.timed import timed

# the engine that stops a beam search once `beam` hypotheses have ended, CTranslate2's default, which
# s2s's rule does not take (`decode.patience` 2): what the patience costs is measured against it
IMPATIENT, PATIENCE_1 = "ct2 patience 1", 1.0


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker's side (workers.py): translate spec["src"] (timed.py); the dtype as the rows record
    it (float32: int8 weights are spec["quantize"])."""
    return {"seconds": timed(translator(spec), spec), "dtype": "float32"}


def translator(spec: dict[str, Any]) -> Any:
    """`translate(lines) -> lines` with CTranslate2 itself: SentencePiece pieces in, the run's decode
    settings and its length limit per sentence (`decoding.length_limits`, the one rule)."""
    import ctranslate2
    import sentencepiece

    from seq2seq.ct2.export_dir import read_export_info
    from seq2seq.decoding.length_limits import output_limits_of_counts
    from seq2seq.decoding.settings import config_search

    export = Path(spec["model"])
    sp = sentencepiece.SentencePieceProcessor(model_file=str(export / "tokenizer" / "spm.model"))
    _, config = read_export_info(export)
    settings, positions = config_search(config.decode), config.model.max_positions
    engine = ctranslate2.Translator(
        str(export),
        device="cpu",
        compute_type=spec["quantize"] or "default",
        inter_threads=spec["at_once"],
        intra_threads=spec["each"],
    )
    names = [export / "shared_vocabulary.json", export / "target_vocabulary.json"]
    target = json.loads(next(p for p in names if p.is_file()).read_text(encoding="utf-8"))
    forbidden = [[target[0]], [target[2]]]  # <pad> and <s> as the export names them (ids 0 and 2)
    beam = spec["beam"]
    patience = PATIENCE_1 if spec["engine"] == IMPATIENT else settings.patience

    def translate(lines: list[str]) -> list[str]:
        pieces = sp.encode(lines, out_type=str)
        limits = output_limits_of_counts([len(p) + 1 for p in pieces], settings, positions)
        pending = []
        for limit in sorted(set(limits)):
            rows = [i for i, n in enumerate(limits) if n == limit]
            results = engine.translate_batch(
                [pieces[i] for i in rows],
                max_batch_size=max(spec["max_tokens"] // beam, 1),
                batch_type="tokens",
                beam_size=beam,
                patience=patience,
                length_penalty=settings.length_penalty if beam > 1 else 0.0,
                max_decoding_length=limit - 1,
                min_decoding_length=settings.min_len,
                max_input_length=0,
                suppress_sequences=forbidden,
                asynchronous=True,
            )
            pending.append((rows, results))
        out = [""] * len(lines)
        for rows, results in pending:
            for i, result in zip(rows, results, strict=True):
                out[i] = sp.decode_pieces(result.result().hypotheses[0])
        return out

    return translate
