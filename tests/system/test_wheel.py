"""The package as users get it: a real wheel (not the editable install the tests run from) holds
every module and the page, and the `s2s` it installs runs from the wheel's own files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.system.test_old_runs import OLD_OUTPUTS, copy_old_run, texts

# one xdist group: the module's wheel is built once, in one process
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

# what a checkout holds at its top level (the rest is local: .git, runs/, caches, build outputs)
CHECKOUT = {"pyproject.toml", "README.md", "seq2seq", "tests", "scripts", "configs", "docs"}
CHECKOUT |= {"experiments", "benchmarks", "tools", "examples"}  # beside the package, never in the wheel


def checkout_copy(directory: Path, names: list[str]) -> set[str]:
    """`shutil.copytree` ignore: a clean checkout, so no stale build/ or egg-info leaks into the wheel."""
    if Path(directory) == ROOT:
        return {name for name in names if name not in CHECKOUT}
    return {name for name in names if name == "__pycache__" or name.endswith(".egg-info")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the checkout, offline (setuptools from this interpreter)."""
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, work / "src", ignore=checkout_copy)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(work / "dist"), str(work / "src")],
        check=True,
        capture_output=True,
    )
    (built,) = (work / "dist").glob("s2s-*.whl")
    return built


def test_the_wheel_holds_every_module_and_the_page_and_nothing_else(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "seq2seq").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert {name for name in names if name.endswith(".py")} == modules
    assert "seq2seq/serve/static/index.html" in names
    assert all(name.startswith(("seq2seq/", "s2s-0.1.0.dist-info/")) for name in names), sorted(names)


def see_these_packages(python: Path) -> None:
    """Let the venv of `python` import this interpreter's installed packages, after its own.

    `venv --system-site-packages` would not do: inside a virtual environment it shows the base
    interpreter's packages, not the active environment's (where torch may be). A `.pth` file of plain
    paths appends them and processes none of their own `.pth` files, so the editable install of
    seq2seq stays out of sight and the wheel's copy is the one imported."""
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (Path(purelib) / "parent_environment.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")


def test_the_installed_wheel_runs_from_its_own_files(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    # torch and the other dependencies come from this interpreter's environment; pip is this one's,
    # pointed at the venv
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python, s2s = venv / "bin" / "python", venv / "bin" / "s2s"
    see_these_packages(python)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
        + ["--force-reinstall", str(wheel)],  # the editable install outside the venv has the same version
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"OMP_NUM_THREADS": "1"}
    where = subprocess.run(
        [str(python), "-c", "import seq2seq.cli; print(seq2seq.cli.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    assert s2s.read_text().splitlines()[0] == f"#!{python}"

    def s2s_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(s2s), *args], cwd=tmp_path, env=env, capture_output=True, text=True)

    assert s2s_run("--help").returncode == 0
    home = copy_old_run(tmp_path)
    expected, options = next(iter(OLD_OUTPUTS.items()))
    out = home / f"new_{expected}"
    done = s2s_run(
        "translate", str(home / "run"), "-i", str(home / "data/valid.src"), "-o", str(out), *options
    )
    assert done.returncode == 0, done.stderr
    assert texts(out) == texts(
        home / expected
    )  # the old code's words (test_old_runs says why not its scores)
