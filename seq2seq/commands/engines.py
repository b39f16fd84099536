"""Which engine decodes: s2s's own decoder over a run, or CTranslate2 over an export of one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from seq2seq.errors import Seq2SeqError
from seq2seq.files import check_outputs
from seq2seq.translate.options import DecodeOptions, DecodeOverrides
from seq2seq.translate.placement import Placement
from seq2seq.translate.streams import load_run_translator
from seq2seq.translate.translator import Translator

if TYPE_CHECKING:
    from seq2seq.ct2.engine import CT2Translator


def load_translator(
    run_dir: Path,
    engine: str,
    asked: DecodeOverrides,
    placement: Placement,
    input: Path | None,
    outputs: Mapping[str, Path | None],
) -> tuple[Translator | CT2Translator, DecodeOptions]:
    """The translator of `engine` for RUN_DIR and the options asked of it, once no output is known to
    replace an input."""
    if engine == "ctranslate2":
        from seq2seq.ct2.engine import CT2Translator  # CTranslate2 is an extra: imported when asked for

        if asked.checkpoints:
            raise Seq2SeqError("--checkpoint picks weights in a run; an export holds one set: leave it out")
        # the whole export is read (CTranslate2 loads a directory): nothing may be written into it
        check_outputs(outputs, {"-i/--input": input, "the export": run_dir})
        translator = CT2Translator.load(run_dir, placement)
        return translator, translator.options(asked)
    if engine != "s2s":
        raise Seq2SeqError(f"--engine {engine!r}: choose s2s or ctranslate2")
    return load_run_translator(run_dir, asked, placement, input, outputs)
