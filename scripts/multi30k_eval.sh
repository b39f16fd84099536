#!/usr/bin/env bash
# Finish a Multi30k recipe run: choose the checkpoint and decode settings on `val`, then score `test` once.
#   bash scripts/multi30k_eval.sh RUN_DIR SRC TGT       e.g. runs/multi30k_de_en de en
# Candidates: best.pt and the average of the last 5 numbered checkpoints (or all, if fewer), each with beam 5 and
# length penalty 0.6 / 1.0 / 1.4, scored on val. The best on val is used on test_2016_flickr.
# Writes RUN_DIR/eval/{val_*.json, test.json, test.hyp, selection.txt} and RUN_DIR/eval/report/index.html.
set -euo pipefail
run="${1:?run dir}"; src="${2:?source language}"; tgt="${3:?target language}"
data="${DATA:-data/multi30k}"
out="$run/eval"
mkdir -p "$out"
kept=$(find "$run/checkpoints" -maxdepth 1 -name 'step_*.pt' | wc -l)  # a short run may keep fewer
s2s average "$run" --last $(( kept < 5 ? kept : 5 )) --output averaged
for checkpoint in best averaged; do
  for lp in 0.6 1.0 1.4; do
    s2s evaluate "$run" --checkpoint "$checkpoint" --beam 5 --length-penalty "$lp" \
      --src "$data/val.$src" --ref "$data/val.$tgt" \
      --out "$out/val_${checkpoint}_lp$lp.hyp" --json "$out/val_${checkpoint}_lp$lp.json" > /dev/null
  done
done
read -r checkpoint lp < <(python - "$out" 2> "$out/val_table.txt" <<'PY'
import json, sys
from pathlib import Path
rows = []
for path in sorted(Path(sys.argv[1]).glob("val_*_lp*.json")):
    checkpoint, lp = path.stem[len("val_"):].rsplit("_lp", 1)
    rows.append((json.loads(path.read_text())["systems"][0]["scores"]["bleu"]["score"], checkpoint, lp))
for bleu, checkpoint, lp in sorted(rows, reverse=True):
    print(f"val BLEU {bleu:6.2f}  checkpoint {checkpoint:9s} beam 5  length penalty {lp}", file=sys.stderr)
best = max(rows)
print(best[1], best[2])
PY
)
cat "$out/val_table.txt"
echo "selected on val: checkpoint $checkpoint, beam 5, length penalty $lp" | tee "$out/selection.txt"
s2s evaluate "$run" --checkpoint "$checkpoint" --beam 5 --length-penalty "$lp" \
  --src "$data/test_2016_flickr.$src" --ref "$data/test_2016_flickr.$tgt" \
  --out "$out/test.hyp" --json "$out/test.json" --report "$out/report"
