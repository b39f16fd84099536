"""What a run is made of, for `check_outputs`: no command's output may be one of its parts or lie in
one of its folders (`run_parts`), nor a decoding command's in what it reads (`run_inputs`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from seq2seq.config import Config
from seq2seq.errors import RunDirError, Seq2SeqError
from seq2seq.run.layout import RunDir


def run_parts(run: RunDir, whole_checkpoints: bool = True) -> dict[str, Path]:
    """What makes up a run, for `check_outputs`: its files, and its folders whole (tokenizer/,
    checkpoints/, prepared/, tensorboard/), so that nothing new appears in them either. Without
    `whole_checkpoints` (`s2s average`, which writes there) checkpoints/ protects only training's own."""
    folders = [run.tokenizer_dir, run.path / "prepared", run.tensorboard_dir]
    folders += [run.checkpoint_dir] if whole_checkpoints else []
    return {**{f"the run's {p.name}/ folder": p for p in folders if p.is_dir()}, **run.own_files()}


def run_inputs(run_dir: Path | None, checkpoints: Sequence[str]) -> dict[str, Path]:
    """What a decoding command reads from a run, which none of its outputs may be or lie in: the run's
    parts (`run_parts`: its files and its folders whole) and each checkpoint it names. A new file
    beside config.yaml is allowed (`s2s evaluate` writes its translations there)."""
    if run_dir is None:
        return {}
    run = RunDir(run_dir)
    named = {}
    for name in checkpoints:
        with contextlib.suppress(RunDirError):  # a missing one is reported when the weights load
            named[f"--checkpoint {name}"] = run.checkpoint_path(name)
    return {**run_parts(run), **named}


def readable_run_inputs(run_dir: Path, checkpoints: Sequence[str], option: str = "") -> dict[str, Path]:
    """`run_inputs` of a run that is there: a run whose config does not load, or a checkpoint named that
    is missing, is refused at once (what a command that loads weights checks before it imports torch
    to load them). With `option`, each part is named after the option that names the run."""
    RunDir(run_dir).load_config()
    return _found_inputs(run_dir, checkpoints, option)


def _found_inputs(run_dir: Path, checkpoints: Sequence[str], option: str) -> dict[str, Path]:
    """`readable_run_inputs` of a run whose config has loaded."""
    run = RunDir(run_dir)
    for name in checkpoints:
        run.checkpoint_path(name)
    return {f"{option} {name}".lstrip(): part for name, part in run_inputs(run_dir, checkpoints).items()}


def reranker_inputs(
    rerank: Sequence[str], forward: Config | None = None
) -> tuple[dict[str, Path], tuple[Config, ...]]:
    """The runs `--rerank` names (found, with the best checkpoint each reranking loads), each config
    read once: what a decoding command reads of them, which no output may replace, and their configs
    (`rerank_weight_of` reads their default weights there). With the config of the run whose beam
    they rerank (`forward`), each must also go the right way (`check_reranker`)."""
    inputs: dict[str, Path] = {}
    configs = []
    for run in rerank:
        option = "--rerank" if len(rerank) == 1 else f"--rerank {run}:"
        second = RunDir(run).load_config()
        inputs |= _found_inputs(Path(run), ("best",), option)
        if forward is not None:
            check_reranker(forward, second, run)
        configs.append(second)
    return inputs, tuple(configs)


def check_reranker(forward: Config, second: Config, name: str) -> None:
    """A reverse run reranks a beam from the target language to the source language, a right-to-left
    run (model.right_to_left) in the forward run's direction; where both runs name their languages
    (data.src_lang, data.tgt_lang), a run going another way is refused."""
    ways = (forward.data.src_lang, forward.data.tgt_lang), (second.data.src_lang, second.data.tgt_lang)
    if not all(ways[0] + ways[1]):
        return  # a run that names no languages is taken at its word
    (src, tgt), (its_src, its_tgt) = ways
    if second.model.right_to_left and ways[1] != ways[0]:
        raise Seq2SeqError(
            f"--rerank {name} is a right-to-left run from {its_src} to {its_tgt}; the run it would "
            f"rerank translates {src} to {tgt}: a right-to-left reranker goes the same way"
        )
    if not second.model.right_to_left and ways[1] != (tgt, src):
        raise Seq2SeqError(
            f"--rerank {name} translates {its_src} to {its_tgt}; the beam of a run from {src} to {tgt} "
            f"is reranked by a reverse run ({tgt} to {src}) or a right-to-left one ({src} to {tgt}, "
            "model.right_to_left)"
        )
