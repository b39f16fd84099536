#!/usr/bin/env bash
# GPU check for a CUDA machine, at most 6.5 minutes: the machine, the CUDA tests, a short bf16
# training run of the Multi30k recipe, bf16 training throughput and MFU of the recipe and 6+6 base
# models against the matmul peak of the same run, beam-5 decoding of the test set, and a 2-GPU
# torchrun step when two GPUs are visible. Each step has its own time budget; a failing step is
# reported and the later ones still run; exit 1 at the end if one failed, 2 for a usage mistake.
#
#   bash scripts/gpu_check.sh --data data/multi30k            results in /tmp/gpu_check (or --out DIR)
#   bash scripts/gpu_check.sh --dry-run data/multi30k         the same steps on the CPU, tiny (CI)
#
# s2s runs from this tree (nothing installed); summary.md is the part to paste into docs/benchmarks.md.
# Options and steps: python3 -m benchmarks.gpu_check --help (benchmarks/gpu_check/).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m benchmarks.gpu_check "$@"
