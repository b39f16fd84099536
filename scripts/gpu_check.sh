#!/usr/bin/env bash
# GPU check for a lent CUDA machine, in well under 8 minutes:
#   1. GPU, driver and torch versions;
#   2. the CUDA tests (tests/system/test_cuda.py);
#   3. bf16 training throughput of the Multi30k recipe's model and the 6+6 base model (target tokens/s,
#      achieved model TFLOP/s against the bf16 matmul peak measured in the same run, peak GPU memory);
#   4. a short bf16 training run, then beam-5 decoding of the Multi30k test set (sentences/s).
# Usage: bash scripts/gpu_check.sh [MULTI30K_DIR]   (default: shared/data/multi30k or ../shared/data/multi30k)
# Results: $OUT (default /tmp/gpu_check): bench_train.json, bench_decode.json, train.log.
# A failing step is reported and the later steps still run; the script exits 1 at the end if one failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
data="${1:-}"
for candidate in "$data" shared/data/multi30k ../shared/data/multi30k; do
  if [ -n "$candidate" ] && [ -f "$candidate/train.de" ]; then data="$candidate"; break; fi
done
[ -f data/multi30k/train.de ] || scripts/fetch_multi30k.sh --from "$data" || exit 1
failed=""
step() {  # step NAME COMMAND...: run it; remember NAME if it fails
  local name="$1"; shift
  "$@" || { echo "== FAILED: $name (exit $?)"; failed="$failed $name"; }
}

echo "== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
step versions python - <<'PY'
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
print(f"GPU {torch.cuda.get_device_name()}, capability {torch.cuda.get_device_capability()}, "
      f"bf16 {torch.cuda.is_bf16_supported()}")
PY

echo "== CUDA tests"
step "CUDA tests" python -m pytest -q -m cuda tests/system/test_cuda.py

echo "== training throughput (bf16)"
step "training throughput" timeout 240 python -m scripts.bench --config configs/multi30k_de_en.yaml \
  --sections train --models recipe,base \
  --device cuda --warmup 10 --steps 40 --matmul-size 8192 --json "$OUT/bench_train.json"

echo "== short training run, then beam-5 decoding of the test set"
train_run() {
  timeout 150 s2s train configs/multi30k_de_en.yaml --overwrite --device cuda \
    --set run_dir="$OUT/run" --set train.precision=bf16 --set train.max_minutes=0 \
    --set train.max_steps=800 --set train.valid_every=800 --set train.max_tokens=8192 2>&1 | tail -n 4 | tee "$OUT/train.log"
}
step "short training run" train_run
step "decoding" timeout 90 python -m scripts.bench --run-dir "$OUT/run" --sections decode --device cuda \
  --src data/multi30k/test_2016_flickr.de --json "$OUT/bench_decode.json"
echo "== done: results in $OUT"
[ -z "$failed" ] || { echo "== failed steps:$failed"; exit 1; }
