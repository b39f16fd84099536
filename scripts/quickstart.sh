#!/usr/bin/env bash
# The quickstart, end to end on CPU in a few minutes: make the corpus, train, translate, score.
#   bash scripts/quickstart.sh            (extra arguments go to `s2s train`, e.g. --overwrite)
set -euo pipefail
cd "$(dirname "$0")/.."
python tools/make_quickstart_data.py
s2s train configs/quickstart.yaml "$@"
printf '42007\n\n1999\n' | s2s translate runs/quickstart
s2s evaluate runs/quickstart --src data/quickstart/test.src --ref data/quickstart/test.tgt \
  --out runs/quickstart/test.hyp --json runs/quickstart/test.json
