"""Where a pipeline reads and writes, checked before its first step runs (a dry run too).

- The workspace is a folder (or is to be made inside one), and so is every folder the pipeline keeps
  in it; every file it keeps there (a record, a log, the table) is a file. Otherwise no record could
  be read or written there, and `--redo` would meet the same path again: the error names it and says
  to choose a folder.
- The pipeline's inputs (its own file, `training.base`, every file of the data section, and what a
  training is set to start from: `train.init_from`, `train.tokenizer_from`) lie outside every folder a
  step makes (or makes again: a training's run, the export, which is deleted first) and are no file a
  step writes: such an input would be read after a step changed it, or deleted with the folder. Each
  is named with the step (`check_paths`).
- `missing`: the inputs that are not there, which stop the pipeline before its first step however
  late the step that reads them comes.
"""

from __future__ import annotations

import os
from pathlib import Path

from seq2seq.errors import ConfigError
from seq2seq.files import lies_in
from seq2seq.pipeline.config import PipelineConfig
from seq2seq.pipeline.plan import Plan
from seq2seq.pipeline.records import record_file
from seq2seq.pipeline.trainings import BaseConfig, given_paths

Named = tuple[str, Path]  # (what it is, for people: `data.test[0].src`, `step export`), its path


def check_paths(file: Path, cfg: PipelineConfig, plan: Plan) -> None:
    """One `ConfigError` naming every workspace path of the wrong kind and every input a step writes."""
    problems = _workspace_problems(plan)
    if not problems:  # (in a workspace that is no folder, every input would lie where a step writes)
        writers = _writers(plan)
        problems = [p for name, path in inputs(file, cfg) if (p := _written(name, path, writers))]
    if problems:
        raise ConfigError(f"invalid pipeline {file}:\n  " + "\n  ".join(problems))


def inputs(file: Path, cfg: PipelineConfig) -> list[Named]:
    """Every file the pipeline is given to read, by its key in the pipeline file."""
    data = cfg.data
    found: list[Named] = [("the pipeline file", file), ("training.base", Path(cfg.training.base))]
    for i, corpus in enumerate(data.corpora):
        found += [(f"data.corpora[{i}].{side}", Path(p)) for side, p in corpus.files().items()]
    found += [("data.valid.src", Path(data.valid.src)), ("data.valid.tgt", Path(data.valid.tgt))]
    for i, test in enumerate(data.test):
        found += [(f"data.test[{i}].src", Path(test.src)), (f"data.test[{i}].tgt", Path(test.tgt))]
    for key, files in (("data.mono_src", data.mono_src), ("data.mono_tgt", data.mono_tgt)):
        found += [(f"{key}[{i}]", Path(p)) for i, p in enumerate(files)]
    return found + given_paths(cfg, BaseConfig.read(Path(cfg.training.base)))


def missing(file: Path, cfg: PipelineConfig) -> list[Path]:
    return [path for _, path in inputs(file, cfg) if not path.exists()]


def _workspace_problems(plan: Plan) -> list[str]:
    """The workspace, the folders the pipeline keeps in it and its files there, each of its kind."""
    root = plan.workspace.root
    above = next((p for p in (root, *root.parents) if p.exists() or p.is_symlink()), root)
    if above.exists() and not above.is_dir():
        inside = f" (the workspace {root} would lie in it)" if above != root else ""
        return [
            f"workspace: {above} is a file, not a folder{inside}: choose a folder for the workspace, a new "
            "one or one s2s pipeline made"
        ]
    ws, names = plan.workspace, [s.name for s in plan.steps]
    folders = [ws.records, ws.logs, *(s.folder for s in plan.steps)]
    files = [*(record_file(root, n) for n in names), *(ws.log_file(n) for n in names)]
    files += [*ws.table_files, ws.lock_file]
    return [
        f"workspace: {path} is {'a file' if is_folder else 'a folder'}, where the pipeline keeps "
        f"{'a folder' if is_folder else 'a file'}: move it out of the workspace, or choose another folder "
        "for the workspace"
        for path, is_folder in [*((f, True) for f in folders), *((f, False) for f in files)]
        if path.exists() and path.is_dir() != is_folder
    ]


def _writers(plan: Plan) -> list[Named]:
    """Every folder a step makes (or makes again) and every file it writes, with the step; and what
    the pipeline keeps of its own (records, logs, the table)."""
    ws = plan.workspace
    found = [
        (f"step {s.name}", p) for s in plan.steps for p in dict.fromkeys((s.folder, *s.writes, *s.cleared))
    ]
    own = [ws.records, ws.logs, *ws.table_files, ws.lock_file]
    return found + [("s2s pipeline itself", p) for p in own]


def _written(name: str, path: Path, writers: list[Named]) -> str:
    """What is wrong with the input `name` at `path`: it lies where a step writes ("" : nothing)."""
    for writer, written in writers:
        if lies_in(path, written):
            same = os.path.realpath(path) == os.path.realpath(written)
            where = f"is {written}, which" if same else f"lies in {written}, where"
            return f"{name}: {path} {where} {writer} writes: keep the pipeline's inputs out of there"
    return ""
