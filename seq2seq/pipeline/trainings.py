"""The training steps: each an `s2s train` of the base run config with `--set` overrides.

Every training gets, in this order: its run directory in the workspace; its data (its corpora as
`data.corpora`, the validation set, the language pair); `training.set`; what its role needs; its
step's `set`. A later override wins, so a step's `set` may change anything but what the pipeline
sets itself (`seq2seq.pipeline.overrides`: refused where the file names it). The backward model reads
the corpora the other way round; a teacher after the first takes the first's tokenizer and the next
seed (an ensemble's members must share one), and so does the right-to-left model with the first's
settings (it reranks the teacher's beam); a shrunk student starts with everything its teacher was
given (its model and tokenizer must be the teacher's but for the layers) and from the teacher's
chosen checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from seq2seq.config import Config, load_config
from seq2seq.config.data import CorpusConfig
from seq2seq.config.loading import read_yaml_mapping
from seq2seq.errors import ConfigError
from seq2seq.flags import argv, switch
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.data import TextSet
from seq2seq.pipeline.overrides import PIPELINE, RUN_DIR, Override, claimed, entries, given
from seq2seq.pipeline.step import Step, Training
from seq2seq.pipeline.workspace import Workspace
from seq2seq.training.jobs import ConfigArgs, TrainJob
from seq2seq.training.request import resolve_paths


@dataclass(frozen=True)
class BaseConfig:
    """What the overrides need to know of the base run config (which need not load alone: its data
    section may be missing)."""

    train_files: bool  # it names data.train_src/train_tgt, which the corpora replace
    control_tokens: tuple[str, ...]

    @staticmethod
    def read(path: Path) -> BaseConfig:
        raw = read_yaml_mapping(path)
        data, tokenizer = (raw.get(key) for key in ("data", "tokenizer"))
        data = data if isinstance(data, dict) else {}
        tokens = (tokenizer if isinstance(tokenizer, dict) else {}).get("control_tokens") or []
        return BaseConfig(
            bool(data.get("train_src") or data.get("train_tgt")),
            tuple(map(str, tokens if isinstance(tokens, list) else [tokens])),
        )


@dataclass(frozen=True)
class Role:
    """One training of the pipeline: its step's name, what it is for, its overrides (made when asked:
    they may need another training's config) and the files it trains on."""

    name: str
    what: str
    overrides: Callable[[], list[Override]]
    reads: tuple[Path, ...]


def roles(cfg: PipelineConfig, ws: Workspace, base: BaseConfig, start: str) -> dict[str, Role]:
    """Every training, by step name; `start`: the checkpoint a shrunk student starts from."""
    s, pair = cfg.steps, f"{cfg.src_lang} -> {cfg.tgt_lang}"
    valid = (Path(cfg.data.valid.src), Path(cfg.data.valid.tgt))
    parallel = (*(Path(p) for c in cfg.data.corpora for p in c.files().values()), *valid)
    found = []
    if s.backward is not None:
        what = f"train the backward model ({cfg.tgt_lang} -> {cfg.src_lang})"
        found.append(Role("backward", what, functools.partial(_backward, cfg, base), parallel))
    runs = teacher_runs(cfg, ws)
    synthetic = (ws.mono, ws.synthetic) if s.back_translation is not None else ()
    for i, run in enumerate(runs):
        member = f", member {i + 1} of {len(runs)}" if len(runs) > 1 else ""
        shared = (runs[0] / "tokenizer",) if i else ()
        teacher = functools.partial(_teacher, cfg, ws, base, i + 1)
        found.append(
            Role(run.name, f"train the teacher ({pair}{member})", teacher, (*parallel, *synthetic, *shared))
        )
    if s.right_to_left is not None:
        what = f"train the right-to-left model ({pair}), the teacher's reranker"
        twin = functools.partial(_right_to_left, cfg, ws, base)
        found.append(Role("right_to_left", what, twin, (*parallel, *synthetic, runs[0] / "tokenizer")))
    if s.student is not None:
        pairs = ws.kept if s.filter is not None else (ws.distill_source, ws.distilled)
        what = "train the student on the distilled pairs" + (
            ", shrunk from the teacher" if s.student.shrink else ""
        )
        student = functools.partial(_student, cfg, ws, base, start)
        chosen = (ws.selection("select_teacher"),) if s.student.shrink else ()  # where it starts
        found.append(Role("student", what, student, (*pairs, *valid, *chosen)))
    return {role.name: role for role in found}


def check_trainings(cfg: PipelineConfig, ws: Workspace, base: BaseConfig) -> None:
    """No `set` of the file names a key the pipeline sets itself, and every training's run config loads
    (a shrunk student's from a checkpoint not chosen yet too), or one `ConfigError` lists every problem
    of every one."""
    problems: list[str] = []
    claims: dict[tuple[str, str, str], list[str]] = {}  # (where, key, why) -> the steps
    for role in roles(cfg, ws, base, "{select_teacher.checkpoint}").values():
        overrides = role.overrides()
        for claim in claimed(overrides):
            claims.setdefault(claim, []).append(role.name)
        try:
            run_config(cfg, role.name, entries(overrides))
        except ConfigError as e:
            problems.append(str(e))
    parts = [
        f"{where}: {key}: the pipeline sets it itself for step{'s' * (len(steps) > 1)} {', '.join(steps)} "
        f"({why}): leave it out"
        for (where, key, why), steps in claims.items()
    ]
    if parts or problems:
        what = "" if parts else ": a training's run config does not load"
        raise ConfigError(f"invalid pipeline{what}:\n  " + "\n  ".join([*parts, *problems]))


def given_paths(cfg: PipelineConfig, base: BaseConfig) -> list[tuple[str, Path]]:
    """What a training is given to start from by the file or the base config, not by the pipeline
    (`train.init_from`, `train.tokenizer_from`), by step and key (`steps.student: train.init_from`)."""
    found = []
    for role in roles(cfg, Workspace.of(cfg), base, "{select_teacher.checkpoint}").values():
        overrides = role.overrides()
        train = run_config(cfg, role.name, entries(overrides))[1].train
        mine = {o.key for o in overrides if o.given == PIPELINE}
        for key, path in (
            ("train.init_from", train.init_from),
            ("train.tokenizer_from", train.tokenizer_from),
        ):
            if path and key not in mine:
                found.append((f"steps.{role.name}: {key}", Path(path)))
    return found


def training_step(cfg: PipelineConfig, role: Role, pending: str = "") -> Step:
    """`s2s train BASE --set run_dir=WORKSPACE/NAME --set ...`, the step of `role`."""
    own, asked = run_config(cfg, role.name, entries(role.overrides()))
    job = TrainJob(ConfigArgs(Path(cfg.training.base), tuple(own)))
    resume, again = switch(TrainJob, "resume"), switch(TrainJob, "overwrite")
    command = Command(Verb.TRAIN, argv(job), cfg.training.launcher, resume=(resume,), again=(again,))
    run = Path(asked.run_dir)
    return Step(
        role.name,
        role.what,
        (command,),
        role.reads,
        (run,),
        Training(asked),
        Path(cfg.workspace) / role.name,
        pending,
    )


def teacher_runs(cfg: PipelineConfig, ws: Workspace) -> tuple[Path, ...]:
    """The teacher's run directory, or each member's (teacher_1, teacher_2, ...)."""
    count = cfg.steps.teacher.ensemble
    return (
        (ws.folder("teacher"),) if count == 1 else tuple(ws.folder(f"teacher_{i + 1}") for i in range(count))
    )


def run_config(cfg: PipelineConfig, name: str, overrides: Sequence[str]) -> tuple[tuple[str, ...], Config]:
    """A training's overrides (its run directory first) and the config they make of the base, paths
    absolute as `s2s train` saves them; a `ConfigError` names the step with each problem."""
    own = (f"{RUN_DIR.entry}{_scalar(str(Path(cfg.workspace) / name))}", *overrides)
    try:
        return own, resolve_paths(load_config(cfg.training.base, list(own)))
    except ConfigError as e:
        problems = str(e).removeprefix("invalid config:\n  ").split("\n  ")
        raise ConfigError("\n  ".join(f"steps.{name}: {p}" for p in problems)) from None


def _backward(cfg: PipelineConfig, base: BaseConfig) -> list[Override]:
    """The corpora and the validation set read target to source (tags mark sources: none here)."""
    assert cfg.steps.backward is not None
    valid = TextSet(src=cfg.data.valid.tgt, tgt=cfg.data.valid.src)
    corpora = [dataclasses.replace(c, src=c.tgt, tgt=c.src, tag="") for c in cfg.data.corpora]
    data = _data(corpora, valid, (cfg.tgt_lang, cfg.src_lang), base)
    return [
        *data,
        *given("training.set", cfg.training.set),
        *given("steps.backward.set", cfg.steps.backward.set),
    ]


def _teacher(cfg: PipelineConfig, ws: Workspace, base: BaseConfig, member: int) -> list[Override]:
    """Teacher `member` (from 1): the corpora and the back-translated pairs, if any; after the first,
    the first's tokenizer and the first's seed + member - 1."""
    corpora, tokens = list(cfg.data.corpora), []
    if (bt := cfg.steps.back_translation) is not None:
        name, src, tgt = "back_translation", str(ws.synthetic), str(ws.mono)
        corpora.append(CorpusConfig(name=name, src=src, tgt=tgt, tag=bt.tag, weight=bt.weight))
        if bt.tag and bt.tag not in base.control_tokens:  # declared before the tokenizer is trained
            tokens = [f"tokenizer.control_tokens={json.dumps([*base.control_tokens, bt.tag])}"]
    why = "it declares the back-translation tag; declare other tokens in training.base"
    own = [*_data(corpora, cfg.data.valid, (cfg.src_lang, cfg.tgt_lang), base)]
    own += [*(Override(PIPELINE, entry, why) for entry in tokens), *given("training.set", cfg.training.set)]
    own += given("steps.teacher.set", cfg.steps.teacher.set)
    if member > 1:
        first = teacher_runs(cfg, ws)[0]
        seed = run_config(cfg, first.name, entries(own))[1].train.seed
        shared = f"train.tokenizer_from={_scalar(str(first))}"
        own += [  # the file's seed (the first member's), one more for each member
            Override("steps.teacher.ensemble", f"train.seed={seed + member - 1}"),
            Override(PIPELINE, shared, "an ensemble's members share the first one's tokenizer"),
        ]
    return own


def _right_to_left(cfg: PipelineConfig, ws: Workspace, base: BaseConfig) -> list[Override]:
    """The first teacher's data and settings, on its tokenizer, each target written last piece first."""
    assert cfg.steps.right_to_left is not None
    first = teacher_runs(cfg, ws)[0]
    why = "it reranks the teacher's beam, in the teacher's pieces"
    return [
        *_teacher(cfg, ws, base, 1),
        Override(PIPELINE, "model.right_to_left=true", "it is the right-to-left model"),
        Override(PIPELINE, f"train.tokenizer_from={_scalar(str(first))}", why),
        *given("steps.right_to_left.set", cfg.steps.right_to_left.set),
    ]


def _student(cfg: PipelineConfig, ws: Workspace, base: BaseConfig, start: str) -> list[Override]:
    """The distilled pairs (those the filter kept); shrunk, the first teacher's settings but its data,
    and its weights at `start`."""
    assert cfg.steps.student is not None
    src, tgt = ws.kept if cfg.steps.filter is not None else (ws.distill_source, ws.distilled)
    distilled = CorpusConfig(name="distilled", src=str(src), tgt=str(tgt))
    own = _data([distilled], cfg.data.valid, (cfg.src_lang, cfg.tgt_lang), base)
    if cfg.steps.student.shrink:
        teacher = [o for o in _teacher(cfg, ws, base, 1) if not o.entry.startswith("data.")]
        why = "a shrunk student starts from the teacher's chosen checkpoint"
        own += [*teacher, Override(PIPELINE, f"train.init_from={_scalar(start)}", why)]
    else:
        own += given("training.set", cfg.training.set)
    return [*own, *given("steps.student.set", cfg.steps.student.set)]


def _data(
    corpora: Sequence[CorpusConfig], valid: TextSet, languages: tuple[str, str], base: BaseConfig
) -> list[Override]:
    """A training's data: its corpora and validation set in place of the base config's."""
    own = [
        f"data.corpora={json.dumps([_changed(c) for c in corpora])}",
        f"data.valid_src={_scalar(valid.src)}",
        f"data.valid_tgt={_scalar(valid.tgt)}",
        f"data.src_lang={languages[0]}",
        f"data.tgt_lang={languages[1]}",
    ]
    if base.train_files:  # the base's own training files give way to the corpora
        own += ["data.train_src=[]", "data.train_tgt=[]"]
    return [
        Override(PIPELINE, entry, "a training's data is the file's data section and language pair")
        for entry in own
    ]


def _changed(corpus: CorpusConfig) -> dict[str, object]:
    """The corpus's settings that are not the defaults, as `data.corpora` takes them."""
    default = dataclasses.asdict(CorpusConfig())
    return {key: value for key, value in dataclasses.asdict(corpus).items() if value != default[key]}


def _scalar(text: str) -> str:
    """`text` as YAML reads back that string (quoted where it would read as a number, a boolean, null
    or a mapping)."""
    return text if yaml.safe_load(text) == text and "\n" not in text else json.dumps(text)
