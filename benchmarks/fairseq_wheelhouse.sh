#!/usr/bin/env bash
# What benchmarks/fairseq_venv.sh needs to build fairseq 0.12.2 on a machine with no network, made
# here, where the package index is reachable: fairseq's source archive, the pure-Python packages it
# pins (hydra-core 1.0.7, omegaconf 2.0.6 and its antlr4 runtime 4.8, built here into a wheel), bitarray
# for that machine's Python, pip 24.0 (omegaconf 2.0.6's metadata is refused by newer pips) and wheel
# (the build's bdist_wheel where the environment's setuptools lacks it).
# torch, numpy, cython, setuptools, regex, sacrebleu and tqdm come from that machine's own Python.
#
#   bash benchmarks/fairseq_wheelhouse.sh DIR [PYTHON_VERSION]     (default 3.12: the GPU image's)
#   ...carry DIR and this repository there, then:
#   bash benchmarks/fairseq_venv.sh VENV --wheelhouse DIR
#
# About 12 MB. Needs the package index (or a mirror pip is configured for).
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: bash benchmarks/fairseq_wheelhouse.sh DIR [PYTHON_VERSION]" >&2
    exit 2
fi
dir="$1" version="${2:-3.12}"
if [ -e "$dir" ]; then echo "error: $dir exists; give a new directory" >&2; exit 2; fi
if ! [[ "$version" =~ ^3\.[0-9]+$ ]]; then echo "error: PYTHON_VERSION: like 3.12, not $version" >&2; exit 2; fi
python="${PYTHON:-python3}"
made="$(mktemp -d)"
trap 'rm -rf "$made"' EXIT
get=("$python" -m pip download --quiet --no-deps --dest "$made")
"${get[@]}" --no-build-isolation --no-binary :all: fairseq==0.12.2
"${get[@]}" --only-binary :all: pip==24.0 wheel==0.45.1
old_pip=("$python" "$made/pip-24.0-py3-none-any.whl/pip" download --quiet --no-deps --dest "$made")
"${old_pip[@]}" --only-binary :all: hydra-core==1.0.7 omegaconf==2.0.6   # metadata pip 24.1+ refuses
platforms=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_28_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
done
"${get[@]}" --only-binary :all: --python-version "$version" --implementation cp "${platforms[@]}" bitarray==2.9.2
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$made" antlr4-python3-runtime==4.8  # a source archive only
mv "$made" "$dir"
trap - EXIT
ls "$dir"
