"""The fairseq peer's install patches (`benchmarks/fairseq_patch.py`): a setup.py without sources
is made buildable, keeping every extension that has its sources, and dataclass defaults Python 3.11
refuses become factories that give the same values."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
from pathlib import Path

import pytest

from benchmarks import fairseq_patch

CONFIGS = """
from dataclasses import dataclass, field


@dataclass
class CommonConfig:
    seed: int = 1


@dataclass
class QuantNoiseConfig:
    pq: float = 0.0


@dataclass
class FairseqConfig:
    common: CommonConfig = CommonConfig()
    quant_noise: QuantNoiseConfig = field(default=QuantNoiseConfig())
    name: str = "transformer"
"""

HYDRA_INIT = """
def hydra_init(FairseqConfig):
    out = {}
    for k in FairseqConfig.__dataclass_fields__:
        v = FairseqConfig.__dataclass_fields__[k].default
        out[k] = v
    return out
"""

SETUP = """
extensions.extend(
    [
        cpp_extension.CppExtension(
            "fairseq.libnat",
            sources=[
                "fairseq/clib/libnat/edit_dist.cpp",
            ],
        ),
        cpp_extension.CppExtension(
            "fairseq.kept",
            sources=["fairseq/clib/kept/a.cpp", "fairseq/clib/kept/b.cpp"],
        ),
    ]
)
"""


def defined(text: str) -> dict:
    namespace: dict = {}
    exec(compile(text, "configs.py", "exec"), namespace)
    return namespace


def test_instance_defaults_become_factories_of_the_same_values():
    with pytest.raises(ValueError, match="mutable default"):  # what Python 3.11 says to fairseq 0.12.2
        defined(CONFIGS)
    patched = defined(fairseq_patch.factory_defaults(CONFIGS))
    config = patched["FairseqConfig"]()
    assert config.common == patched["CommonConfig"]() and config.quant_noise == patched["QuantNoiseConfig"]()
    assert config.common is not patched["FairseqConfig"]().common
    assert config.name == "transformer"
    assert fairseq_patch.factory_defaults(
        fairseq_patch.factory_defaults(CONFIGS)
    ) == fairseq_patch.factory_defaults(CONFIGS)


def test_hydra_start_up_reads_the_factories(tmp_path: Path):
    package = tmp_path / "fairseq" / "dataclass"
    package.mkdir(parents=True)
    (package / "configs.py").write_text(CONFIGS, encoding="utf-8")
    (package / "initialize.py").write_text(HYDRA_INIT, encoding="utf-8")
    (tmp_path / "hydra").mkdir()
    changed = fairseq_patch.patch_site(tmp_path)
    assert sorted(p.name for p in changed) == ["configs.py", "initialize.py"]
    configs = defined((package / "configs.py").read_text(encoding="utf-8"))
    nodes = defined((package / "initialize.py").read_text(encoding="utf-8"))["hydra_init"](
        configs["FairseqConfig"]
    )
    assert nodes["common"] == configs["CommonConfig"]() and nodes["name"] == "transformer"
    assert fairseq_patch.patch_site(tmp_path) == []


def test_only_extensions_without_their_sources_are_dropped(tmp_path: Path):
    for name in ("a.cpp", "b.cpp"):
        (tmp_path / "fairseq/clib/kept").mkdir(parents=True, exist_ok=True)
        (tmp_path / "fairseq/clib/kept" / name).write_text("", encoding="utf-8")
    text, dropped = fairseq_patch.buildable_setup(SETUP, tmp_path)
    assert dropped == ["fairseq.libnat"]
    assert "fairseq.kept" in text and "edit_dist.cpp" not in text
    ast.parse(text)
    (tmp_path / "fairseq/clib/libnat").mkdir(parents=True)
    (tmp_path / "fairseq/clib/libnat/edit_dist.cpp").write_text("", encoding="utf-8")
    assert fairseq_patch.buildable_setup(SETUP, tmp_path) == (SETUP, [])


def test_dataclass_fields_keep_their_types():
    patched = defined(fairseq_patch.factory_defaults(CONFIGS))
    fields = {f.name: f for f in dataclasses.fields(patched["FairseqConfig"])}
    assert fields["common"].type == "CommonConfig" or fields["common"].type is patched["CommonConfig"]
    assert fields["common"].default is dataclasses.MISSING


def test_a_module_without_dataclasses_is_left_as_it_is():
    plain = (
        "class Holder:\n    def __init__(self):\n        pass\n\n\nclass Box:\n    inner: Holder = Holder()\n"
    )
    assert fairseq_patch.factory_defaults(plain) == plain
    assert fairseq_patch.factory_defaults(
        CONFIGS.replace("dataclass, field", "dataclass")
    ) == CONFIGS.replace("dataclass, field", "dataclass")


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("fairseq_venv.sh", ["{new}", "--wheelhouse", "{empty}"], "holds no fairseq-0.12.2.tar.gz"),
        ("fairseq_venv.sh", ["{new}", "--wheels", "{empty}"], "usage: bash benchmarks/fairseq_venv.sh"),
        ("fairseq_venv.sh", ["{empty}"], "exists; give a new directory"),
        ("fairseq_wheelhouse.sh", ["{empty}"], "exists; give a new directory"),
        ("fairseq_wheelhouse.sh", ["{new}", "312"], "PYTHON_VERSION: like 3.12, not 312"),
        ("fairseq_wheelhouse.sh", [], "usage: bash benchmarks/fairseq_wheelhouse.sh"),
    ],
)
def test_the_install_scripts_refuse_a_mistake_before_any_work(tmp_path: Path, script, args, message):
    """A wrong call says why with exit 2 and leaves nothing behind: no environment, no wheel house."""
    empty, new = tmp_path / "empty", tmp_path / "new"
    empty.mkdir()
    argv = [a.format(empty=empty, new=new) for a in args]
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / script), *argv], capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not new.exists() and not any(empty.iterdir())
