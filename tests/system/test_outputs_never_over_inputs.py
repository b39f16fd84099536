"""No command or script writes over or into what it reads: an output that is one of the command's
inputs (a corpus, the config, the test set), a file of the run (config, tokenizer, checkpoints,
records, the prepared corpus) or of an export, or a path inside the run's folders or the export, spelled
any way (relative, `..`, a symlink, a symlinked folder, a hard link), is refused (exit 2) and nothing
there changes; so is a folder a command writes into that holds what it reads (a prepared corpus or a
work directory around the data); `train --overwrite` refuses to clear a run directory holding its own
data."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from benchmarks.gpu_check.check import MULTI30K, StepResult
from tests.conftest import ROOT, tiny_config_dict, write_corpus
from tests.helpers import digest, run_cli, tree_digest


@dataclass(frozen=True)
class Writer:
    """A command that writes to a path it is given (`{out}`), and what it reads: its output must never
    be any of these, nor lie in a folder of them (`run/...`, `export/...` and `files/...` name them).
    A script's writer names the module whose `main(argv)` it runs, or the shell script it starts."""

    command: str  # with {run}, {rerank}, {export}, {files}, {out} and {scratch} (a folder of the test's own)
    victims: tuple[str, ...]
    script: str = ""  # benchmarks.gpu_check.__main__, ..., or fetch_multi30k.sh; "" for an s2s command

    def args(self, root: Path, out: Path, scratch: Path) -> list[str]:
        paths = {name: root / name for name in ("run", "rerank", "export", "files")} | {"out": out}
        return [word.format(**paths, scratch=scratch) for word in self.command.split()]


RUN_FILES = ("config.yaml", "inputs.json", "metrics.jsonl", "train.log", "tokenizer/spm.model")
CHECKPOINTS = ("checkpoints/best.pt", "checkpoints/last.pt", "checkpoints/step_6.pt")
RUN = tuple(f"run/{p}" for p in (*RUN_FILES, *CHECKPOINTS, "tokenizer/new.txt", "checkpoints/new.txt"))
PREPARED = ("run/prepared/train/manifest.json", "run/prepared/new.png")  # the run's prepared corpus
SOME_OF_RUN = ("run/config.yaml", "run/metrics.jsonl", "run/tokenizer/new.txt", "run/checkpoints/best.pt")
EXPORT = tuple(
    f"export/{p}"
    for p in ("model.bin", "config.json", "shared_vocabulary.json", "s2s.json", "tokenizer/spm.model")
) + ("export/new.txt", "export/source_vocabulary.json")  # new files an export would read
FOLDERS = ("run/tokenizer", "run/checkpoints", "run/prepared")  # whose index.html or export would lie in them
NEW_DIRS = ("run/tokenizer/new", "run/checkpoints/new", "run/prepared/new")
RERANK = tuple(f"rerank/{p}" for p in ("config.yaml", "tokenizer/spm.model", "checkpoints/best.pt"))
RERANK += ("rerank/tokenizer/new.txt",)  # the run --rerank names: its beam's reverse scorer
EVALUATE = "evaluate {run} --src {files}/test.src --ref {files}/test.tgt"
TEST_SET = ("files/test.src", "files/test.tgt")
CORPUS = ("files/config.yaml", "files/train.src", "files/train.tgt", "files/valid.src")  # a new run's
MULTI30K_DIR = ("files/data", "files/data/inside")  # what --data names, and a folder in it
GPU_CHECK = "--dry-run {files}/data --steps machine"
BENCH = "--sections train --device cpu --config {files}/config.yaml --run-dir {run} --src {files}/test.src"
BENCH += " --ref {files}/test.tgt"
WRITERS = {
    "translate -o": Writer(
        "translate {run} -i {files}/test.src -o {out}", (*RUN, *PREPARED, "files/test.src")
    ),
    "translate --engine ctranslate2 -o": Writer(
        "translate {export} --engine ctranslate2 -i {files}/test.src -o {out}", (*EXPORT, "files/test.src")
    ),
    "translate --rerank -o": Writer("translate {run} --rerank {rerank} -i {files}/test.src -o {out}", RERANK),
    "evaluate --out": Writer(f"{EVALUATE} --out {{out}}", (*RUN, *TEST_SET)),
    "evaluate --rerank --out": Writer(f"{EVALUATE} --rerank {{rerank}} --out {{out}}", RERANK),
    "evaluate --json": Writer(f"{EVALUATE} --json {{out}}", (*RUN, *TEST_SET)),
    "evaluate --report": Writer(f"{EVALUATE} --report {{out}}", FOLDERS),
    "evaluate --hyp --json": Writer(
        "evaluate --hyp {files}/hyp.txt --ref {files}/test.tgt --json {out}", ("files/hyp.txt", TEST_SET[1])
    ),
    "evaluate RUN --hyp --report": Writer(
        "evaluate {run} --hyp {files}/hyp.txt --ref {files}/test.tgt --report {out}", FOLDERS
    ),
    "score -o": Writer(
        "score {run} --src {files}/test.src --tgt {files}/test.tgt -o {out}", (*RUN, *TEST_SET)
    ),
    "average --output": Writer(
        "average {run} --last 1 --output {out}",
        (*(f"run/{p}" for p in CHECKPOINTS), "run/checkpoints/step_99.pt", "run/tokenizer/new.pt"),
    ),
    "export OUT_DIR": Writer("export {run} {out}", NEW_DIRS),
    "export --format huggingface OUT_DIR": Writer("export {run} {out} --format huggingface", NEW_DIRS),
    "prepare --figure": Writer(
        "prepare {run}/config.yaml --set run_dir={run} --figure {out}", (*RUN, *PREPARED)
    ),
    "prepare (a new run) --figure": Writer("prepare {files}/config.yaml --figure {out}", CORPUS),
    "train data.prepared_dir": Writer(
        "train {files}/config.yaml --set data.prepared_dir={out}", ("files", "files/train.src")
    ),
    "gpu_check --work": Writer(
        f"{GPU_CHECK} --work {{out}} --out {{scratch}}/out",
        ("files", *MULTI30K_DIR),
        "benchmarks.gpu_check.__main__",
    ),
    "gpu_check --out": Writer(
        f"{GPU_CHECK} --work {{scratch}}/work --out {{out}}", MULTI30K_DIR, "benchmarks.gpu_check.__main__"
    ),
    "bench --json": Writer(
        f"{BENCH} --json {{out}}", (*SOME_OF_RUN, *PREPARED, *TEST_SET, *CORPUS), "benchmarks.__main__"
    ),
    "bench --work": Writer(f"{BENCH} --work {{out}}", ("files", "run", *FOLDERS), "benchmarks.__main__"),
    "noisy_corpus --work": Writer(
        "--data {files}/data --work {out}", ("files", *MULTI30K_DIR), "experiments.noisy_corpus.noisy_corpus"
    ),
    "fetch_multi30k.sh --out": Writer(
        "--from {files}/data --out {out}", MULTI30K_DIR[:1], "fetch_multi30k.sh"
    ),
    "serve_screenshot OUTPUT": Writer("{run} {out}", (*SOME_OF_RUN, *PREPARED), "tools.serve_screenshot"),
}
FOLDER_VICTIMS = {"files", "run", "rerank", *FOLDERS, *MULTI30K_DIR, *NEW_DIRS}  # no hard link to a folder


def spell(victim: Path, how: str, scratch: Path) -> Path:
    """Another way to write the path `victim` (which may not exist yet)."""
    alias = scratch / f"alias{victim.suffix}"  # another name, so that only the path can give it away
    if how == "as given":
        return victim
    if how == "relative":
        return Path(os.path.relpath(victim))
    if how == "through ..":
        return victim.parent / ".." / victim.parent.name / victim.name
    if how == "symlink":
        alias.symlink_to(victim)
        return alias
    if how == "symlinked folder":
        (scratch / "folder").symlink_to(victim.parent)
        return scratch / "folder" / victim.name
    if how == "hard link":
        os.link(victim, alias)
        return alias
    raise AssertionError(how)


SPELLINGS = ("as given", "relative", "through ..", "symlink", "symlinked folder", "hard link")
NOT_YET = {"new", "new.txt", "new.pt", "new.png", "step_99.pt", "source_vocabulary.json", "inside"}
CASES = [
    (w, v, how)
    for w, writer in WRITERS.items()
    for v in writer.victims
    for how in SPELLINGS
    if how != "hard link" or not (Path(v).name in NOT_YET or v in FOLDER_VICTIMS)
]
NEEDS = {"serve_screenshot OUTPUT": ("playwright", "the screenshot needs playwright (s2s[dev])")}


def run_writer(writer: Writer, args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """The writer's exit code and what it printed: an s2s command through `run_cli`, a script's
    `main(argv)` in this process, its work past its checks made quick (no step, no section runs)."""
    if not writer.script:
        result = run_cli(*args)
        return result.exit_code, result.output
    if writer.script.endswith(".sh"):
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / writer.script), *args], capture_output=True, text=True
        )
        return done.returncode, done.stdout + done.stderr
    module = importlib.import_module(writer.script)
    if writer.script == "benchmarks.gpu_check.__main__":
        monkeypatch.setattr(module, "run_step", lambda step, *_: StepResult(step.name, "skipped"))
    if writer.script == "benchmarks.__main__":
        monkeypatch.setattr(module, "run_sections", lambda *_: {"skipped": [], "failed": {}, "targets": {}})
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            code = module.main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code or 0, printed.getvalue()


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> tuple[Path, Path]:
    """Where `pristine` and the module's working copy of it (`workspace`) go."""
    return tmp_path_factory.mktemp("pristine"), tmp_path_factory.mktemp("protected") / "root"


@pytest.fixture(scope="module")
def pristine(trained_run, places) -> Path:
    """A folder holding `run/` (a copy of the tiny run), `rerank/` (another, for --rerank), `export/`
    (its CTranslate2 export, when CTranslate2 is installed) and `files/`: a test set and hypotheses, a
    corpus with a config naming it (as the working copy's paths, so that both hold the same bytes) and
    Multi30k's files in data/."""
    root, copy = places
    shutil.copytree(trained_run("tiny").run, root / "run")
    shutil.copytree(trained_run("tiny").run, root / "rerank")
    files = root / "files"
    files.mkdir()
    _, ref = write_corpus(files, "test", 6, seed=5)
    shutil.copy(ref, files / "hyp.txt")
    raw = tiny_config_dict(files)  # its corpus: files/data/{train,valid}.{src,tgt}
    for name in ("train.src", "train.tgt", "valid.src", "valid.tgt"):
        (files / "data" / name).rename(files / name)
    for key in ("train_src", "train_tgt", "valid_src", "valid_tgt"):
        raw["data"][key] = str(copy / "files" / Path(raw["data"][key]).name)
    raw["run_dir"] = str(copy / "new_run")
    (files / "config.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    for name in MULTI30K:
        (files / "data" / name).write_text("ein Satz\n" if name.endswith(".de") else "a sentence\n")
    if importlib.util.find_spec("ctranslate2") is not None:
        result = run_cli("export", str(root / "run"), str(root / "export"))
        assert result.exit_code == 0, result.output
    return root


@pytest.fixture(scope="module")
def workspace(pristine, places) -> Path:
    shutil.copytree(pristine, places[1], symlinks=True)
    return places[1]


@pytest.fixture
def protected(pristine, workspace) -> Iterator[Path]:
    """The module's copy of `pristine`, made whole again after a test that changed it (so that one
    failure cannot hide another)."""
    yield workspace
    if tree_digest(workspace) != tree_digest(pristine):
        shutil.rmtree(workspace)
        shutil.copytree(pristine, workspace, symlinks=True)


@pytest.mark.parametrize(("writer", "victim", "how"), CASES, ids=[" | ".join(c) for c in CASES])
def test_no_command_writes_over_or_into_what_it_reads(protected, tmp_path, monkeypatch, writer, victim, how):
    """Every output a command or script takes, spelled every way, is refused when it is (or lies in the
    folder of, or is a folder around) a file the command reads: the run, the export, an input; nothing
    under them changes."""
    if victim.startswith("export/") and not (protected / "export").is_dir():
        pytest.skip("CTranslate2 is an optional extra: s2s[ct2]")
    if (need := NEEDS.get(writer)) and importlib.util.find_spec(need[0]) is None:
        pytest.skip(need[1])
    out = spell(protected / victim, how, tmp_path)
    before = tree_digest(protected)
    code, output = run_writer(WRITERS[writer], WRITERS[writer].args(protected, out, tmp_path), monkeypatch)
    assert code == 2, output
    assert "error:" in output and "Traceback" not in output
    assert tree_digest(protected) == before  # nothing replaced, nothing new


@pytest.mark.parametrize("writer", ["translate -o", "evaluate --out", "average --output"])
def test_a_new_file_beside_the_run_is_allowed(protected, tmp_path, writer):
    """The rule refuses only what the command reads: a new file in the run directory itself, beside
    config.yaml (where `s2s evaluate` puts its translations), is written."""
    out = protected / "run" / f"{writer.split()[0]}.new"
    try:
        result = run_cli(*WRITERS[writer].args(protected, out, tmp_path))
        assert result.exit_code == 0, result.output
        assert out.is_file() or out.with_name(out.name + ".pt").is_file()
    finally:
        out.unlink(missing_ok=True)
        out.with_name(out.name + ".pt").unlink(missing_ok=True)


def test_an_output_in_the_report_folder_named_like_an_input_is_refused(tmp_path):
    """--report DIR writes DIR/index.html: refused when that is the --ref it reads."""
    report = tmp_path / "report"
    report.mkdir()
    page = report / "index.html"
    page.write_text("a b c\n")
    before = digest(page)
    result = run_cli("evaluate", "--hyp", str(page), "--ref", str(page), "--report", str(report))
    assert result.exit_code == 2 and "error:" in result.output
    assert digest(page) == before


def test_two_outputs_on_one_file_are_refused(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b c\n")
    out = tmp_path / "same.json"
    result = run_cli(
        "evaluate", "--hyp", str(ref), "--ref", str(ref), "--json", str(out), "--report", str(tmp_path)
    )
    assert result.exit_code == 0  # distinct files are fine
    result = run_cli(
        "evaluate",
        "--hyp",
        str(ref),
        "--ref",
        str(ref),
        "--json",
        str(tmp_path / "index.html"),
        "--report",
        str(tmp_path),
    )
    assert result.exit_code == 2 and "name the same file" in result.output


def test_overwrite_refuses_to_delete_data_inside_the_run_directory(run_copy):
    config, run = run_copy.config, run_copy.run
    raw = yaml.safe_load(config.read_text())
    inside = run / "corpus.src"
    shutil.copy(raw["data"]["train_src"], inside)
    raw["data"]["train_src"] = str(inside)
    config.write_text(yaml.safe_dump(raw))
    result = run_cli("train", str(config), "--overwrite")
    assert result.exit_code == 2 and "would delete data.train_src" in result.output
    assert inside.is_file() and (run / "checkpoints" / "last.pt").is_file()


@pytest.mark.slow
def test_stdout_redirected_onto_the_input_is_refused(tiny_run, tmp_path):
    run = tiny_run.run
    src = tmp_path / "src.txt"
    src.write_text("red cat\n")
    with src.open("ab") as appended:  # `s2s translate RUN -i src.txt >> src.txt`
        result = subprocess.run(
            [sys.executable, "-m", "seq2seq", "translate", str(run), "-i", str(src)],
            stdout=appended,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=120,  # reading its own output would never end
        )
    assert result.returncode == 2 and b"stdout is the input file" in result.stderr
    assert src.read_text() == "red cat\n"
