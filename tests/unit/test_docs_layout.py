"""docs/development.md's layout is the repository's: it names every top-level folder that holds code
and every wing of the package, and everything it names is there.

The layout is the code blocks of the page's "Layout" section. A line that starts at the left margin
names a top-level folder with its first word (`seq2seq/`, `experiments/`); a line indented by two
spaces names what lies in the last one (`config/`, `errors.py files.py`, `search_rule/ augmentation/`);
the words after the names, and the lines indented further, describe them.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PAGE = ROOT / "docs" / "development.md"
CODE = {".py", ".sh"}
NAME = re.compile(r"[\w.-]+/|[\w-]+\.\w+")  # a folder (`config/`) or a file (`errors.py`)


def layout_blocks(page: str) -> list[str]:
    """The code blocks of the page's Layout section."""
    section = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    assert section, f"{PAGE.relative_to(ROOT)}: no '## Layout' section"
    return re.findall(r"^```\n(.*?)^```", section.group(1), re.S | re.M)


def leading_names(line: str) -> list[str]:
    """The names a line starts with, before its description."""
    names = []
    for word in line.split():
        if not NAME.fullmatch(word):
            break
        names.append(word)
    return names


def named(blocks: list[str]) -> dict[str, set[str]]:
    """Each top-level folder the layout names, with the names it gives inside it."""
    found: dict[str, set[str]] = {}
    top = ""
    for line in (line for block in blocks for line in block.splitlines()):
        if line and not line[0].isspace():
            top = leading_names(line)[0].rstrip("/")
            found.setdefault(top, set())
        elif re.match(r"  \S", line) and top:
            found[top].update(leading_names(line))
    return found


def local(root: Path = ROOT) -> list[str]:
    """What a checkout makes rather than holds: the top-level patterns of .gitignore (runs/, site/)."""
    lines = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line.strip("/") for line in lines if line and "/" not in line.strip("/")]


def code_folders(root: Path = ROOT) -> set[str]:
    """The repository's top-level folders that hold code (a .py or .sh file at any depth)."""
    ignored = local(root)
    return {
        folder.name
        for folder in root.iterdir()
        if folder.is_dir()
        and not folder.name.startswith(".")
        and not any(fnmatch.fnmatch(folder.name, pattern) for pattern in ignored)
        and any(p.suffix in CODE for p in folder.rglob("*") if "__pycache__" not in p.parts)
    }


def wings(package: Path = ROOT / "seq2seq") -> set[str]:
    """The package's subpackages: its folders that hold Python."""
    return {f"{d.name}/" for d in package.iterdir() if d.is_dir() and any(d.glob("*.py"))}


@pytest.fixture(scope="module")
def layout() -> dict[str, set[str]]:
    return named(layout_blocks(PAGE.read_text(encoding="utf-8")))


def test_every_folder_that_holds_code_is_in_the_layout(layout):
    missing = sorted(code_folders() - set(layout))
    assert missing == [], f"{PAGE.relative_to(ROOT)}'s layout does not name: {', '.join(missing)}"


def test_every_wing_of_the_package_is_in_the_layout(layout):
    missing = sorted(wings() - layout.get("seq2seq", set()))
    assert missing == [], f"{PAGE.relative_to(ROOT)}'s layout of seq2seq/ does not name: {', '.join(missing)}"


def test_everything_the_layout_names_is_there(layout):
    paths = [f"{top}/" for top in layout]
    paths += [f"{top}/{name}" for top, names in layout.items() for name in names]
    gone = sorted(path for path in paths if not (ROOT / path).exists())
    assert gone == [], f"{PAGE.relative_to(ROOT)}'s layout names what is not there: {', '.join(gone)}"


def test_the_layout_is_read_as_written(tmp_path):
    """The reading itself: margin lines name folders, two-space lines what is in them, and
    descriptions, however they are worded, name nothing."""
    page = """## Layout

```
seq2seq/         the package
  config/        the config: data/ in a description is no name
  errors.py files.py   core files
                 more description: fake/ names nothing
scripts/         shell commands
  quickstart.sh
tests/           unit/ in a description is no name
```

## Next
"""
    assert named(layout_blocks(page)) == {
        "seq2seq": {"config/", "errors.py", "files.py"},
        "scripts": {"quickstart.sh"},
        "tests": set(),
    }
    (tmp_path / ".gitignore").write_text("runs/\n*.egg-info/\ndata/quickstart/\n", encoding="utf-8")
    for folder in ("seq2seq/config", "runs", "s2s.egg-info", "data", "docs", ".ci"):
        (tmp_path / folder).mkdir(parents=True)
    for file in ("seq2seq/config/a.py", "runs/b.py", "s2s.egg-info/c.py", "docs/d.md", ".ci/run.sh"):
        (tmp_path / file).write_text("", encoding="utf-8")
    assert code_folders(tmp_path) == {"seq2seq"}
    assert wings(tmp_path / "seq2seq") == {"config/"}
