"""The documentation holds: every config key is described where the reference is generated from,
the README stays a short front page whose example config is the recipe it names, and no text the
project ships names a path outside the repository, an issue tracker's number or an outside tool."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from seq2seq.config import config_from_dict, load_config
from tests.helpers import ROOT
from tools.docs import PAGES
from tools.docs.config_reference import undocumented

README_MAX_LINES = 250
FOLDERS = ("seq2seq", "experiments", "benchmarks", "tools", "scripts", "tests", "configs", "docs", "examples")
TREES = ("README.md", *FOLDERS)
TEXT = {".md", ".py", ".sh", ".yaml", ".yml", ".toml", ".txt", ".html", ".json", ".cfg"}
# what the project's text may not name (this file aside): paths beside the repository, issue numbers,
# tools of the machines s2s was developed on
OUTSIDE = [
    ("a path outside the repository", r"\.\./shared|/work/"),
    ("an issue number", r"(?i)\bissues?\s+#?\d|(?<![\w&/])#\d+\b(?!-)|\bissues?'s?\s+targets?|\bthe issue\b"),
    ("a tool s2s does not use", r"\blent\b|\blending\b|device tool|\$OUT\b"),
]


def shipped_text() -> list[Path]:
    files = []
    for name in TREES:
        path = ROOT / name
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in found if p.suffix in TEXT and p != Path(__file__)]
    return files


def test_no_text_names_what_lies_outside_the_project():
    found = []
    for path in shipped_text():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for what, pattern in OUTSIDE:
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)


def test_every_config_key_has_a_description():
    """The comment beside a field is what the configuration reference shows for its key."""
    assert undocumented() == [], "write a comment beside each field: " + ", ".join(undocumented())


def test_the_generated_pages_hold_every_key_and_command():
    config, cli = PAGES["reference/config.md"](), PAGES["reference/cli.md"]()
    for key in ("run_dir", "data.corpora[].clean.langid", "train.ema_decay", "decode.length_norm"):
        assert f"| `{key}` |" in config
    for command in (
        "train",
        "prepare",
        "translate",
        "evaluate",
        "score",
        "export",
        "import",
        "average",
        "serve",
    ):
        assert f"## `s2s {command}`" in cli
    assert "## `s2s cache list`" in cli and "| `--beam <int>` |" in cli


def test_the_readme_is_a_short_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md: {len(lines)} lines; move detail into docs/"
    assert any("bash scripts/quickstart.sh" in line for line in lines[:30]), "the quickstart comes first"
    assert any("python -m pytest" in line for line in lines[:30]), "and the tests' command with it"


def test_the_readme_config_is_the_recipe_it_names():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^`(configs/[\w.]+\.yaml)`.*?```yaml\n(.*?)```", readme, re.S | re.M)
    assert block, "README.md: the complete config example, after the name of the recipe it shows"
    shown = config_from_dict(yaml.safe_load(block.group(2)))
    assert shown == load_config(ROOT / block.group(1))


def test_every_file_the_docs_name_exists():
    """A script, config or test the README or a page names is there, so a command they quote runs."""
    named = re.compile(rf"(?<![\w/.])((?:{'|'.join(FOLDERS)})/[\w./-]+?\.(?:py|sh|yaml|md))")
    missing = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for path in named.findall(page.read_text(encoding="utf-8"))
        if not (ROOT / path).exists()
    ]
    assert missing == [], "\n".join(missing)
