#!/usr/bin/env bash
# A virtual environment with fairseq 0.12.2 for the benchmark's fairseq section, on the torch of the
# interpreter that runs this script (the same kernels for both trainers):
#
#   bash benchmarks/fairseq_venv.sh DIR                        from the package index
#   bash benchmarks/fairseq_venv.sh DIR --wheelhouse WHEELS    offline, from benchmarks/fairseq_wheelhouse.sh
#   python -m benchmarks --sections fairseq --fairseq-python DIR/bin/python --fairseq-steps 120
#
# fairseq 0.12.2 does not build or import on Python 3.11 as published; benchmarks/fairseq_patch.py
# says why and what it changes (nothing that fairseq computes). Needs a C++ compiler, and the package
# index (or a local mirror pip is configured for) unless --wheelhouse is given. With --wheelhouse the
# environment sees the interpreter's own packages (torch, numpy, cython, setuptools, regex,
# sacrebleu, tqdm: a GPU machine's CUDA torch is not copied) and installs only what WHEELS holds.
set -euo pipefail
usage="usage: bash benchmarks/fairseq_venv.sh DIR [--wheelhouse WHEELS]"
if [ $# -ne 1 ] && { [ $# -ne 3 ] || [ "$2" != --wheelhouse ]; }; then echo "$usage" >&2; exit 2; fi
dir="$1" wheels="${3:-}"
if [ -e "$dir" ]; then echo "error: $dir exists; give a new directory" >&2; exit 2; fi
if [ -n "$wheels" ] && ! ls "$wheels"/fairseq-0.12.2.tar.gz "$wheels"/pip-24.0-*.whl >/dev/null 2>&1; then
    echo "error: $wheels holds no fairseq-0.12.2.tar.gz and pip 24.0 wheel: make it with" \
        "bash benchmarks/fairseq_wheelhouse.sh" >&2
    exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
torch_version="$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
if [ -n "$wheels" ]; then
    wheels="$(cd "$wheels" && pwd)"
    "$python" -m venv --system-site-packages "$dir"
    dir="$(cd "$dir" && pwd)"
    # pip 24.0 from its wheel (omegaconf 2.0.6 has metadata newer pips refuse), then nothing but WHEELS
    "$dir/bin/python" "$(ls "$wheels"/pip-24.0-*.whl)/pip" install --quiet --no-index --ignore-installed \
        "$wheels"/pip-24.0-*.whl
    pip=("$dir/bin/python" -m pip install --quiet --no-index --no-deps --find-links "$wheels")
    "${pip[@]}" hydra-core==1.0.7 omegaconf==2.0.6 antlr4-python3-runtime==4.8 bitarray wheel
    tar -xzf "$wheels"/fairseq-0.12.2.tar.gz -C "$src"
else
    "$python" -m venv "$dir"
    dir="$(cd "$dir" && pwd)"
    pip=("$dir/bin/python" -m pip install --quiet)
    "${pip[@]}" "pip<24.1"              # omegaconf 2.0.6, which fairseq pins, has metadata newer pip refuses
    echo "torch==$torch_version" > "$src/same-torch.txt"   # nothing fairseq pulls in may replace it
    pip+=(--constraint "$src/same-torch.txt")
    "${pip[@]}" "torch==$torch_version" "numpy<2" cython
    "$dir/bin/python" -m pip download --quiet --no-deps --no-build-isolation --no-binary :all: --dest "$src" \
        fairseq==0.12.2
    tar -xzf "$src"/fairseq-0.12.2.tar.gz -C "$src"
fi
PYTHONPATH="$root" "$python" -m benchmarks.fairseq_patch setup "$src/fairseq-0.12.2/setup.py"
"${pip[@]}" --no-build-isolation "$src/fairseq-0.12.2"
site="$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PYTHONPATH="$root" "$python" -m benchmarks.fairseq_patch site "$site"
(cd "$src" && "$dir/bin/python" -c '
import sys, fairseq, torch
print("fairseq", fairseq.__version__, "torch", torch.__version__)
if torch.__version__.split("+")[0] != sys.argv[1]:
    sys.exit(f"error: the environment has torch {torch.__version__}, not {sys.argv[1]}")
' "$torch_version")
