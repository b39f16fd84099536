"""The training steps: each an `s2s train` of the base run config with `--set` overrides.

Every training gets, in this order: its run directory in the workspace; its data (its corpora as
`data.corpora`, the validation set, the language pair); `training.set`; what its role needs; its
step's `set`. A later override wins, so a step's `set` may change anything. The backward model reads
the corpora the other way round; a teacher after the first takes the first's tokenizer and the next
seed (an ensemble's members must share one); a shrunk student starts with everything its teacher was
given (its model and tokenizer must be the teacher's but for the layers) and its teacher's chosen
checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from seq2seq.config import Config, load_config
from seq2seq.config.data import CorpusConfig
from seq2seq.config.loading import read_yaml_mapping
from seq2seq.errors import ConfigError
from seq2seq.pipeline.command import Command, Verb
from seq2seq.pipeline.config import PipelineConfig, TextSet
from seq2seq.pipeline.step import Step, Training
from seq2seq.pipeline.workspace import Workspace
from seq2seq.training.plan import resolve_paths


@dataclass(frozen=True)
class BaseConfig:
    """What the overrides need to know of the base run config (which need not be whole alone: its
    data section may be missing)."""

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


def backward_overrides(cfg: PipelineConfig, base: BaseConfig) -> list[str]:
    """The backward model: the corpora and the validation set read target to source."""
    valid = TextSet(src=cfg.data.valid.tgt, tgt=cfg.data.valid.src)
    corpora = [
        dataclasses.replace(c, src=c.tgt, tgt=c.src, tag="") for c in cfg.data.corpora
    ]  # tags mark sources
    data = data_overrides(corpora, valid, (cfg.tgt_lang, cfg.src_lang), base)
    assert cfg.steps.backward is not None
    return [*data, *cfg.training.set, *cfg.steps.backward.set]


def teacher_overrides(cfg: PipelineConfig, ws: Workspace, base: BaseConfig, member: int) -> list[str]:
    """Teacher `member` (from 1): the corpora, and the back-translated pairs when there are some;
    after the first, the first's tokenizer and its own seed."""
    corpora = list(cfg.data.corpora)
    tokens: list[str] = []
    if (bt := cfg.steps.back_translation) is not None:
        synthetic = CorpusConfig(
            name="back_translation", src=str(ws.synthetic), tgt=str(ws.mono), tag=bt.tag, weight=bt.weight
        )
        corpora.append(synthetic)
        tokens = control_tokens(base, bt.tag)
    own = [*data_overrides(corpora, cfg.data.valid, (cfg.src_lang, cfg.tgt_lang), base), *tokens]
    own += [*cfg.training.set, *cfg.steps.teacher.set]
    if member > 1:
        first = teacher_runs(cfg, ws)[0]
        seed = run_config(cfg, first.name, own)[1].train.seed
        own += [f"train.seed={seed + member - 1}", f"train.tokenizer_from={_scalar(str(first))}"]
    return own


def student_overrides(cfg: PipelineConfig, ws: Workspace, base: BaseConfig, start: str) -> list[str]:
    """The student: the distilled pairs (those the filter kept); shrunk, it starts as the first
    teacher at `start` (its chosen checkpoint), with everything the teacher was given."""
    assert cfg.steps.student is not None
    src, tgt = ws.kept if cfg.steps.filter is not None else (ws.distill_source, ws.distilled)
    distilled = CorpusConfig(name="distilled", src=str(src), tgt=str(tgt))
    own = data_overrides([distilled], cfg.data.valid, (cfg.src_lang, cfg.tgt_lang), base)
    if cfg.steps.student.shrink:
        teacher = teacher_overrides(cfg, ws, base, 1)
        own = [*own, *(o for o in teacher if not o.startswith("data.")), f"train.init_from={_scalar(start)}"]
    else:
        own += cfg.training.set
    return [*own, *cfg.steps.student.set]


def teacher_runs(cfg: PipelineConfig, ws: Workspace) -> tuple[Path, ...]:
    """The teacher's run directory, or each member's (teacher_1, teacher_2, ...)."""
    count = cfg.steps.teacher.ensemble
    return (
        (ws.folder("teacher"),) if count == 1 else tuple(ws.folder(f"teacher_{i + 1}") for i in range(count))
    )


def data_overrides(
    corpora: Sequence[CorpusConfig], valid: TextSet, languages: tuple[str, str], base: BaseConfig
) -> list[str]:
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
    return own


def control_tokens(base: BaseConfig, tag: str) -> list[str]:
    """`tokenizer.control_tokens` with `tag` declared (tagged back-translation), or nothing to add."""
    if not tag or tag in base.control_tokens:
        return []
    return [f"tokenizer.control_tokens={json.dumps([*base.control_tokens, tag])}"]


def run_config(cfg: PipelineConfig, name: str, overrides: Sequence[str]) -> tuple[tuple[str, ...], Config]:
    """A training's overrides (its run directory first) and the config they make of the base, paths
    absolute as `s2s train` saves them; a `ConfigError` names the step."""
    own = (f"run_dir={_scalar(str(Path(cfg.workspace) / name))}", *overrides)
    try:
        return own, resolve_paths(load_config(cfg.training.base, list(own)))
    except ConfigError as e:
        raise ConfigError(
            f"steps.{name}: "
            + str(e).removeprefix("invalid config:\n  ").replace("\n  ", f"\n  steps.{name}: ")
        ) from None


def training_step(
    cfg: PipelineConfig, name: str, what: str, overrides: Sequence[str], reads: Sequence[Path]
) -> Step:
    """`s2s train BASE --set run_dir=WORKSPACE/NAME --set ...` as a step."""
    own, asked = run_config(cfg, name, overrides)
    args = (cfg.training.base, *(arg for value in own for arg in ("--set", value)))
    command = Command(Verb.TRAIN, args, cfg.training.launcher, resume=("--resume",), again=("--overwrite",))
    run = Path(asked.run_dir)
    return Step(
        name,
        what,
        (command,),
        (Path(cfg.training.base), *reads),
        (run,),
        Training(asked),
        Path(cfg.workspace) / name,
    )


def corpus_files(corpora: Sequence[CorpusConfig]) -> list[Path]:
    return [Path(path) for c in corpora for path in c.files().values()]


def _changed(corpus: CorpusConfig) -> dict[str, object]:
    """The corpus's settings that are not the defaults, as `data.corpora` takes them."""
    default = dataclasses.asdict(CorpusConfig())
    found = dataclasses.asdict(corpus)
    return {key: value for key, value in found.items() if value != default[key]}


def _scalar(text: str) -> str:
    """`text` as YAML reads it back as that string (quoted when it would read as a number, a
    boolean or null)."""
    return text if yaml.safe_load(text) == text and "\n" not in text else json.dumps(text)
