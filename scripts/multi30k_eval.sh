#!/usr/bin/env bash
# Finish a Multi30k recipe run: choose the checkpoint and decode settings on `val`, then score `test` once.
#   bash scripts/multi30k_eval.sh RUN_DIR SRC TGT       e.g. runs/multi30k_de_en de en
# Candidates: best.pt and the average of the last 5 numbered checkpoints (or all, if fewer), each with beam 5 and
# length penalty 0.6 / 1.0 / 1.4, scored on val. The best on val is used on test_2016_flickr.
# Writes RUN_DIR/eval/{val_*.json, selection.json (s2s select: the choice and every candidate ranked), test.json,
# test.hyp}
# and RUN_DIR/eval/report/index.html. Run it from the repository root. PRECISION (default auto) is
# passed to every decode: bf16 or fp32 keep a busy machine's timing out of auto's choice.
set -euo pipefail
shopt -s inherit_errexit  # a failing $(command) stops the script too
run="${1:?run dir}"; src="${2:?source language}"; tgt="${3:?target language}"
data="${DATA:-data/multi30k}"
precision="${PRECISION:-auto}"
out="$run/eval"
mkdir -p "$out"
kept=$(find "$run/checkpoints" -maxdepth 1 -name 'step_*.pt' | wc -l)  # a short run may keep fewer
s2s average "$run" --last $(( kept < 5 ? kept : 5 )) --output averaged
for checkpoint in best averaged; do
  for lp in 0.6 1.0 1.4; do
    s2s evaluate "$run" --checkpoint "$checkpoint" --beam 5 --length-penalty "$lp" --precision "$precision" \
      --src "$data/val.$src" --ref "$data/val.$tgt" \
      --out "$out/val_${checkpoint}_lp$lp.hyp" --json "$out/val_${checkpoint}_lp$lp.json" > /dev/null
  done
done
# "CHECKPOINT LP VAL_BLEU"; every candidate's val BLEU on stderr
choice=$(s2s select "$out"/val_*_lp*.json --json "$out/selection.json")
read -r checkpoint lp _ <<< "$choice"
echo "selected on val: checkpoint $checkpoint, beam 5, length penalty $lp"
s2s evaluate "$run" --checkpoint "$checkpoint" --beam 5 --length-penalty "$lp" --precision "$precision" \
  --src "$data/test_2016_flickr.$src" --ref "$data/test_2016_flickr.$tgt" \
  --out "$out/test.hyp" --json "$out/test.json" --report "$out/report"
