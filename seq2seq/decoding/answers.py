"""How a run answers its sources: a translation is searched token by token, a reader's labels are
read in one pass.

The way is chosen once from the run's task (`ANSWERS`) and handed to whatever decodes; what a
caller may ask beyond the answers (a forced start, n-best lists, an ensemble, an attention map) is
a property of the way, not a question about the task. Each way says what model it answers with;
the run's task and its model's family go together (the config's rules), so the chooser holds ways
of any model. What a way can be asked is read without torch (the CTranslate2 engine's way); the
search or the reading is imported when a way answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from seq2seq.config.task import Task

if TYPE_CHECKING:
    from torch import Tensor

    from seq2seq.decoding.decodable import Decodable
    from seq2seq.decoding.hypothesis import Hypothesis
    from seq2seq.decoding.prefix import Forced
    from seq2seq.decoding.settings import SearchSettings
    from seq2seq.models.encoder_only import EncoderOnlyTransformer

ModelT = TypeVar("ModelT", contravariant=True)  # what a way answers with


class Answers(Protocol[ModelT]):
    """What turns a batch of sources into hypotheses, and what else it can be asked for."""

    takes_prefixes: bool  # each output can be forced to start with given target tokens
    gives_nbest: bool  # several hypotheses per source, best first
    averages_ensembles: bool  # several checkpoints can answer together, their probabilities averaged
    draws_attention: bool  # the output was written looking at the source: an attention map to draw
    scores_targets: bool  # a given target has a log-probability, token by token (`s2s score`)

    def __call__(
        self, model: ModelT, src: Tensor, settings: SearchSettings, prefix: Forced | None
    ) -> list[list[Hypothesis]]:
        """Hypotheses for each row of src (B, S) (ids ending in <eos>, right-padded)."""
        ...


@dataclass(frozen=True)
class Searched:
    """A translation: written token by token by the search (greedy, beam or sampling)."""

    takes_prefixes = True
    gives_nbest = True
    averages_ensembles = True
    draws_attention = True
    scores_targets = True

    def __call__(
        self, model: Decodable[Any, Any], src: Tensor, settings: SearchSettings, prefix: Forced | None
    ) -> list[list[Hypothesis]]:
        from seq2seq.decoding.search import search

        return search(model, src, settings, prefix)


@dataclass(frozen=True)
class Read:
    """A reader's labels or tags: read in one pass (`decoding.reading`), one answer per source, by
    one model, which writes nothing it could have looked at the source for."""

    takes_prefixes = False
    gives_nbest = False
    averages_ensembles = False
    draws_attention = False
    scores_targets = False

    def __call__(
        self, model: EncoderOnlyTransformer, src: Tensor, settings: SearchSettings, prefix: Forced | None
    ) -> list[list[Hypothesis]]:
        from seq2seq.decoding.reading import read

        return read(model, src)


SEARCHED = Searched()  # what decoding does when no task says otherwise
ANSWERS: dict[Task, Answers[Any]] = {Task.TRANSLATE: SEARCHED, Task.CLASSIFY: Read(), Task.TAG: Read()}
