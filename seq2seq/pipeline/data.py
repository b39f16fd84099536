"""The pipeline file's `data` section: the parallel corpora (the run configs' own `CorpusConfig`),
the validation set, the test sets the final table scores, and monolingual text of either side, with
the rules that section alone can check."""

from __future__ import annotations

from dataclasses import dataclass, field

from seq2seq.config.corpus import NAME, CorpusConfig
from seq2seq.config.rules import Rule


@dataclass(frozen=True)
class TextSet:
    """A validation or test set: two aligned files (and a test set's name, for the table)."""

    name: str = ""
    src: str = ""
    tgt: str = ""


@dataclass(frozen=True)
class PipelineData:
    """The text: parallel corpora, validation and test sets, monolingual text of either side."""

    corpora: tuple[CorpusConfig, ...] = ()
    valid: TextSet = field(default_factory=TextSet)
    test: tuple[TextSet, ...] = ()
    mono_src: tuple[str, ...] = ()  # source-side text: more for the teacher to translate (distillation)
    mono_tgt: tuple[str, ...] = ()  # target-side text: back-translated into synthetic sources


def data_rules(data: PipelineData) -> list[Rule]:
    """Every corpus named once, with no language of its own; val and every named test set given."""
    names = [c.name for c in data.corpora]
    sets = [("data.valid", data.valid)] + [(f"data.test[{i}]", t) for i, t in enumerate(data.test)]
    return [
        (not data.corpora, "data.corpora: required: the parallel corpora ({name, src, tgt} each)"),
        *(
            (
                bool(c.src_lang or c.tgt_lang),
                f"data.corpora[{i}]: a pipeline is one language pair (src_lang, tgt_lang at the top): "
                "leave out the corpus's own",
            )
            for i, c in enumerate(data.corpora)
        ),
        *(
            (not NAME.fullmatch(c.name), f"data.corpora[{i}].name: required")
            for i, c in enumerate(data.corpora)
        ),
        (len(set(names)) != len(names), "data.corpora: two corpora have the same name"),
        (not data.test, "data.test: required: the sets the final table scores ({name, src, tgt} each)"),
        *((not t.name, f"data.test[{i}].name: required") for i, t in enumerate(data.test)),
        (len({t.name for t in data.test}) != len(data.test), "data.test: two test sets have the same name"),
        *(
            rule
            for where, text in sets
            for rule in (
                (not text.src, f"{where}.src: required"),
                (not text.tgt, f"{where}.tgt: required"),
            )
        ),
    ]
