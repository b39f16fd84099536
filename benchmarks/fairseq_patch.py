"""Make fairseq 0.12.2, the training benchmark's peer, build and import on today's Python.

fairseq 0.12.2 is its last release (June 2022), and it does not install as published:

- its source archive lists C++ extensions whose sources it does not contain (`libbase`, `libnat`,
  `alignment_train_cpu_binding`, none of them used to train a Transformer), so the build fails;
- fairseq and hydra-core 1.0.7, which it pins, give dataclass fields a dataclass instance as their
  default (`common: CommonConfig = CommonConfig()`), which Python 3.11 refuses at import.

`setup SETUP_PY` drops the extensions whose sources are missing, before the build; `site
SITE_PACKAGES` turns such defaults into `default_factory` in the installed fairseq and hydra, and
makes fairseq's hydra start-up read a factory. Nothing changes what fairseq computes.
`benchmarks/fairseq_venv.sh` runs both.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

# `name: Type = Type()` and `name: Type = field(default=Type())`: a shared mutable default
_INSTANCE = re.compile(r"^(\s+\w+: (\w+) = )\2\(\)[ \t]*$", re.MULTILINE)
_FIELD_INSTANCE = re.compile(r"field\(default=(\w+)\(\)\)")
# one C++ extension of setup.py: its name and the list of its sources
_EXTENSION = re.compile(
    r"cpp_extension\.CppExtension\(\s*\"([^\"]+)\",\s*sources=\[([^\]]*)\],?\s*\),?", re.DOTALL
)
_HYDRA_INIT = "v = FairseqConfig.__dataclass_fields__[k].default\n"
_HYDRA_INIT_FACTORY = (
    "f = FairseqConfig.__dataclass_fields__[k]\n"
    "        v = f.default_factory() if callable(f.default_factory) else f.default\n"
)


def factory_defaults(text: str) -> str:
    """`text` with every dataclass-instance default made a `default_factory`: in a module that
    defines dataclasses and imports `field`, else as it is."""
    if "@dataclass" not in text or not re.search(r"^from dataclasses import .*\bfield\b", text, re.MULTILINE):
        return text
    text = _INSTANCE.sub(r"\1field(default_factory=\2)", text)
    return _FIELD_INSTANCE.sub(r"field(default_factory=\1)", text)


def buildable_setup(text: str, root: Path) -> tuple[str, list[str]]:
    """setup.py's `text` without the C++ extensions whose sources are missing under `root`; their names."""
    dropped = []

    def keep(match: re.Match[str]) -> str:
        sources = re.findall(r"\"([^\"]+)\"", match.group(2))
        if all((root / source).is_file() for source in sources):
            return match.group(0)
        dropped.append(match.group(1))
        return ""

    return _EXTENSION.sub(keep, text), dropped


def patch_setup(setup_py: Path) -> list[str]:
    """Rewrite `setup_py` so that it builds; the extensions dropped."""
    text, dropped = buildable_setup(setup_py.read_text(encoding="utf-8"), setup_py.parent)
    setup_py.write_text(text, encoding="utf-8")
    return dropped


def patch_site(site: Path) -> list[Path]:
    """Rewrite the installed fairseq and hydra under `site` to import on Python 3.11; the files changed."""
    changed = []
    for package in ("fairseq", "hydra"):
        for path in sorted((site / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            new = factory_defaults(text).replace(_HYDRA_INIT, _HYDRA_INIT_FACTORY)
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fairseq_patch", description=__doc__)
    parser.add_argument("what", choices=("setup", "site"), help="setup: before the build; site: after it")
    parser.add_argument("path", type=Path, help="fairseq's setup.py, or the site-packages it went into")
    args = parser.parse_args(argv)
    if args.what == "setup":
        print("dropped extensions without sources:", " ".join(patch_setup(args.path)) or "none")
    else:
        print(f"default factories in {len(patch_site(args.path))} files")


if __name__ == "__main__":
    main()
