"""How a command decodes: what its command line (or a server request) asks, merged once with the run's
`decode` config into one frozen `DecodeOptions`.

`decode_options` is the only place the rules live: an n-best above the beam raises the beam;
sampling draws one hypothesis (beam 1, and no --beam N or --nbest N); a sampling knob without
--sampling is a mistake; the weights default to the best checkpoint, the batch budget to
`decode.max_tokens`. `s2s translate`, `s2s evaluate` and `s2s serve` (each request too) share it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from seq2seq.config import Config, DecodeConfig
from seq2seq.config.bounds import (
    MAX_BATCH_TOKENS,
    MAX_BEAM,
    MAX_LENGTH_PENALTY,
    MAX_PATIENCE,
    MAX_POSITIONS,
    MAX_SAMPLING_TEMPERATURE,
    MAX_SEED,
    MAX_VOCAB,
)
from seq2seq.config.decode import LENGTH_NORMS
from seq2seq.decoding.settings import SearchSettings, config_search
from seq2seq.errors import Seq2SeqError
from seq2seq.flags import option

T = TypeVar("T")


LONGEST = f"no output is longer than {MAX_POSITIONS} tokens"
MAX_RERANK_WEIGHT = 100.0
# --rerank-weight's defaults, by what the run of --rerank is (`rerank_weight_of`): for a reverse run
# the best on Multi30k val of 0.1 to 1.0 (0.1 beside an ensemble; experiments/noisy_channel/), for a
# right-to-left one the best of 0.1 to 30 (experiments/right_to_left/)
DEFAULT_RERANK_WEIGHT = 0.2
RIGHT_TO_LEFT_RERANK_WEIGHT = 3.0


@dataclass(frozen=True)
class DecodeOverrides:
    """What the command line asks of decoding; a None field is left to the run's `decode` config."""

    beam: int | None = option(
        None, "Beam size (1 = greedy).", between=(1, MAX_BEAM), why="each step scores beam x vocabulary"
    )
    nbest: int = option(
        1,
        "Hypotheses per line, tab-separated, each with its score.",
        between=(1, MAX_BEAM),
        why="the beam is at least as wide",
    )
    length_penalty: float | None = option(
        None,
        "Length normalization alpha (decode.length_penalty; 0 = none).",
        between=(0.0, MAX_LENGTH_PENALTY),
        why="length ** alpha must stay a finite number",
    )
    length_norm: str | None = option(
        None, "Beam scores over length**alpha (power) or ((5+length)/6)**alpha (gnmt) [default: the run's]."
    )
    patience: float | None = option(
        None, "Beam search ends at beam x patience hypotheses.", between=(1, MAX_PATIENCE)
    )
    max_len_a: float | None = option(
        None,
        "Longest output = A x source tokens + B (decode.max_len_a).",
        between=(0.0, float(MAX_POSITIONS)),
        why=LONGEST,
    )
    max_len_b: int | None = option(
        None, "See --max-len-a (decode.max_len_b).", between=(0, MAX_POSITIONS), why=LONGEST
    )
    min_len: int | None = option(
        None, "Shortest output in tokens (decode.min_len).", between=(0, MAX_POSITIONS), why=LONGEST
    )
    no_repeat_ngram: int | None = option(
        None,
        "Never repeat an n-gram of this size (decode.no_repeat_ngram).",
        between=(0, MAX_POSITIONS),
        why=LONGEST,
    )
    sampling: bool = option(False, "Draw each token at random instead of searching (back-translation).")
    temperature: float = option(  # the sampling knobs apply only with `sampling`
        1.0,
        "Sampling temperature.",
        between=(1e-6, MAX_SAMPLING_TEMPERATURE),
        why="above it every token is about as likely",
    )
    top_k: int = option(
        0,
        "Sample among the k most likely tokens (0 = all).",
        between=(0, MAX_VOCAB),
        why="no vocabulary is larger",
    )
    top_p: float = option(1.0, "Sample among the smallest set of tokens with mass p.", between=(1e-6, 1.0))
    seed: int | None = option(None, "Seed for --sampling (same seed, same output).", between=(0, MAX_SEED))
    max_tokens: int | None = option(
        None, "Source tokens per batch.", between=(1, MAX_BATCH_TOKENS), why="a batch's memory"
    )
    mbr: str | None = option(
        None,
        "Minimum Bayes risk: of the beam, keep the hypothesis that agrees most with the others by "
        "chrf or bleu, each weighted by its probability (the beam is searched whole).",
    )
    rerank: tuple[str, ...] = option(
        (),
        "Rerank the beam by a second run: a run trained the other way scores the source given each "
        "translation (noisy channel); a right-to-left run (model.right_to_left) scores each "
        "translation given the source (the beam is searched whole). Repeat to add runs: their weighted "
        "scores are summed.",
        "--rerank",
    )
    rerank_weight: tuple[float, ...] = option(
        (),
        "With --rerank: the weight of the second run's mean log-probability per token, added to the "
        "search's score; one per --rerank run, in its order "
        f"[default: {DEFAULT_RERANK_WEIGHT:g} for a reverse run, "
        f"{RIGHT_TO_LEFT_RERANK_WEIGHT:g} for a right-to-left one].",
        between=(0.0, MAX_RERANK_WEIGHT),
        why="past it the search's score no longer counts",
    )
    restore_case: bool = option(
        False,
        "Translate a line in ALL CAPS or Title Case recased as ordinary text, then give the translation "
        "its case back (other lines are translated as given).",
    )
    checkpoints: tuple[str, ...] = option(  # several: an ensemble
        (),
        "best, last, a name in checkpoints/, or a path; repeat for an ensemble [default: best].",
        "--checkpoint",
    )


MBR_UTILITIES = ("chrf", "bleu")  # what --mbr ranks a beam by (`seq2seq.translate.mbr`)
SEARCH_ONLY = ("nbest", "sampling", "temperature", "top_k", "top_p", "seed")  # one best translation
RERANKING = ("mbr", "rerank", "rerank_weight")  # what chooses from a whole beam once it is searched
BATCH_ONLY = ("max_tokens", "checkpoints")  # what scoring a given text asks of decoding
RUN_DEFAULTS = DecodeOverrides()  # nothing asked: the run's decode config as it is


@dataclass(frozen=True)
class Rerank:
    """How each line's beam is chosen from once searched whole: by expected utility (`mbr`, a utility's
    name: `seq2seq.translate.mbr`), by second runs (`runs`, their directories: reverse or right-to-left
    runs, `seq2seq.translate.rescoring`, each scored at its weight in `weights`), or not at all (the
    search's order)."""

    mbr: str | None = None
    runs: tuple[str, ...] = ()
    # of each second run's score, in the order of `runs`; none until weighed (`rerank_weight_of`)
    weights: tuple[float, ...] = ()

    @property
    def wanted(self) -> bool:
        return self.mbr is not None or bool(self.runs)

    def record(self) -> dict[str, object]:
        """What a resumable output's and an evaluation's record say of it ({} when nothing reranks: as
        records made before reranking existed; one run as a name and a number, as before several
        could rerank)."""
        if len(self.runs) == 1:
            return {"rerank": self.runs[0], "rerank_weight": self.weights[0]}
        if self.runs:
            return {"rerank": list(self.runs), "rerank_weight": list(self.weights)}
        return {"mbr": self.mbr} if self.mbr is not None else {}

    @classmethod
    def read(cls, runs: object, weights: object) -> Rerank:
        """The reranking runs and weights as `record` writes them, read back: one run as a name and a
        number, several as two lists of one length, none as nothing or "" (records made before
        reranking). A value of another shape raises ValueError or TypeError."""
        if not runs:
            return cls()
        if isinstance(runs, str):
            return cls(runs=(runs,), weights=(float(weights),))  # type: ignore[arg-type]
        named, weighed = tuple(str(r) for r in runs), tuple(float(w) for w in weights)  # type: ignore[attr-defined]
        if len(named) != len(weighed):
            raise ValueError(f"{len(named)} reranking runs with {len(weighed)} weights")
        return cls(runs=named, weights=weighed)


NO_RERANK = Rerank()  # the search's order


@dataclass(frozen=True)
class DecodeOptions:
    """How one command decodes, every rule applied: the search's settings, the batch budget, the weights."""

    search: SearchSettings
    max_tokens: int  # source tokens per batch (before the beam's expansion)
    checkpoints: tuple[str, ...]  # at least one
    rerank: Rerank = NO_RERANK  # how a line's beam is chosen from once searched
    restore_case: bool = False  # lines in ALL CAPS or Title Case recased, then restored (`translate.casing`)

    def record(self) -> dict[str, object]:
        """What a resumable output's and an evaluation's record say of the line path ({} by default: as
        records made before reranking and recasing existed)."""
        return self.rerank.record() | ({"restore_case": True} if self.restore_case else {})


def decode_options(
    asked: DecodeOverrides, decode: DecodeConfig, max_positions: int | None = None
) -> DecodeOptions:
    """The run's `decode` config with what was asked on top, checked against every rule; with the
    model's `max_positions`, against what it can write too."""
    check_sampling(asked)
    check_length_norm(asked)
    if max_positions is not None and asked.min_len is not None and asked.min_len >= max_positions - 1:
        raise Seq2SeqError(
            f"--min-len {asked.min_len}: the model writes at most {max_positions - 2} tokens "
            f"(model.max_positions {max_positions}); ask fewer"
        )
    base = config_search(decode)
    beam = 1 if asked.sampling else given(asked.beam, base.beam)
    search = dataclasses.replace(
        base,
        beam=max(beam, asked.nbest),  # n-best hypotheses need a beam at least as wide
        nbest=asked.nbest,
        length_penalty=given(asked.length_penalty, base.length_penalty),
        length_norm=given(asked.length_norm, base.length_norm),
        patience=given(asked.patience, base.patience),
        max_len_a=given(asked.max_len_a, base.max_len_a),
        max_len_b=given(asked.max_len_b, base.max_len_b),
        min_len=given(asked.min_len, base.min_len),
        no_repeat_ngram=given(asked.no_repeat_ngram, base.no_repeat_ngram),
        sampling=asked.sampling,
        temperature=asked.temperature,
        top_k=asked.top_k,
        top_p=asked.top_p,
        seed=asked.seed,
    )
    budget, checkpoints = given(asked.max_tokens, decode.max_tokens), asked.checkpoints or ("best",)
    rerank = Rerank(asked.mbr, asked.rerank, asked.rerank_weight)
    return DecodeOptions(search, budget, checkpoints, rerank, asked.restore_case)


def rerank_weight_of(asked: DecodeOverrides, configs: Sequence[Config]) -> DecodeOverrides:
    """ASKED with --rerank-weight's defaults for its --rerank runs where none is given, from each run's
    config (`configs`, in the order of the runs: `reranker_inputs` read them): a reverse run's, or a
    right-to-left run's (model.right_to_left), a stronger judge."""
    if not asked.rerank or asked.rerank_weight:
        return asked
    right_to_left = (config.model.right_to_left for _, config in zip(asked.rerank, configs, strict=True))
    weights = tuple(RIGHT_TO_LEFT_RERANK_WEIGHT if r2l else DEFAULT_RERANK_WEIGHT for r2l in right_to_left)
    return dataclasses.replace(asked, rerank_weight=weights)


def check_length_norm(asked: DecodeOverrides) -> None:
    """--length-norm names one of the rules `decode.length_norm` takes, --mbr one of the utilities; one
    reranking at most."""
    if asked.length_norm is not None and asked.length_norm not in LENGTH_NORMS:
        raise Seq2SeqError(f"--length-norm {asked.length_norm!r}: choose one of {', '.join(LENGTH_NORMS)}")
    if asked.mbr is not None and asked.mbr not in MBR_UTILITIES:
        raise Seq2SeqError(f"--mbr {asked.mbr!r}: choose one of {', '.join(MBR_UTILITIES)}")
    check_rerank(asked)


def check_rerank(asked: DecodeOverrides) -> None:
    """--mbr or --rerank, not both; no --rerank-weight without --rerank, else one for each of its runs;
    no run named twice."""
    runs, weights = asked.rerank, asked.rerank_weight
    if asked.mbr is not None and runs:
        raise Seq2SeqError("--mbr and --rerank each choose from the beam: give one of them")
    if weights and not runs:
        raise Seq2SeqError("--rerank-weight weighs the run of --rerank RUN: add it")
    if weights and len(weights) != len(runs):
        raise Seq2SeqError(
            f"--rerank-weight: {len(weights)} weight(s) for {len(runs)} --rerank run(s): give one for "
            "each run, in the order of --rerank, or none for each run's default"
        )
    found = [os.path.realpath(run) for run in runs]  # one run, however spelled
    if len(set(found)) != len(found):
        twice = next(run for run, path in zip(runs, found, strict=True) if found.count(path) > 1)
        raise Seq2SeqError(f"--rerank {twice} is named twice: its weight is what counts it more")


def check_sampling(asked: DecodeOverrides) -> None:
    """Sampling draws one hypothesis per line; its knobs mean nothing without it."""
    if asked.sampling:
        if asked.mbr is not None or asked.rerank:
            raise Seq2SeqError(
                "--mbr and --rerank choose among a beam's hypotheses; --sampling draws one: leave one out"
            )
        if (asked.beam or 1) > 1 or asked.nbest > 1:
            raise Seq2SeqError(
                "--sampling draws one translation per line: use it without --beam N or --nbest N"
            )
    elif (asked.temperature, asked.top_k, asked.top_p, asked.seed) != (1.0, 0, 1.0, None):
        raise Seq2SeqError("--temperature, --top-k, --top-p and --seed apply to --sampling; add it")


def given(value: T | None, default: T) -> T:
    """`value` when the command line gave it, else the config's `default`."""
    return default if value is None else value
