#!/usr/bin/env bash
# The multilingual experiment (README.md here, docs/multilingual.md): six bilingual Multi30k models of
# 9.5 minutes each, each trained, chosen on val and scored by its pipeline (bilingual/*.yaml), against
# one model of all six directions trained 57 minutes (configs/multi30k_multilingual.yaml) with one
# choice on the mean of the six val sets, zero-shot fr->de and the same through English; then the table.
# From the repository root, each training alone on the machine:
#   scripts/fetch_multi30k.sh --langs de,en,fr,cs      (or --from DIR: a local copy)
#   bash experiments/multilingual/run.sh               (everything under runs/ml/)
# Each pipeline skips what it has done; the six-direction run is trained once (its finished.json).
set -euo pipefail
shopt -s inherit_errexit  # a failing $(command) stops the script too
data="${DATA:-data/multi30k}"
pairs=(de-en fr-en cs-en en-de en-fr en-cs)
for pair in "${pairs[@]}"; do
  s2s pipeline "experiments/multilingual/bilingual/${pair/-/_}.yaml"
done
run=runs/ml/multilingual out=runs/ml/multilingual/eval
[ -f "$run/finished.json" ] || s2s train configs/multi30k_multilingual.yaml --set "run_dir=$run"
s2s average "$run" --last 5 --output averaged
for pair in "${pairs[@]}"; do  # the same six candidates on every direction's val
  s=${pair%-*} t=${pair#*-}
  for c in best averaged; do for lp in 0.6 1.0 1.4; do
    s2s evaluate "$run" --to "$t" --checkpoint "$c" --beam 5 --length-penalty "$lp" --src "$data/val.$s" \
      --ref "$data/val.$t" --out "$out/$pair/val_${c}_lp$lp.hyp" --json "$out/$pair/val_${c}_lp$lp.json" > /dev/null
  done; done
done
read -r c lp _ <<< "$(s2s select "$out"/*/val_*_lp*.json --json "$out/selection.json")"  # the best mean
for pair in "${pairs[@]}" fr-de fr-en-de; do  # fr-de: zero-shot; fr-en-de: through English
  s=${pair%%-*} t=${pair##*-} via=()
  [ "$pair" = fr-en-de ] && via=(--pivot en)
  for split in val test_2016_flickr; do
    s2s evaluate "$run" --to "$t" "${via[@]}" --checkpoint "$c" --beam 5 --length-penalty "$lp" \
      --src "$data/$split.$s" --ref "$data/$split.$t" --out "$out/$pair/$split.hyp" \
      --json "$out/$pair/$split.json" > /dev/null
  done
done
python -m experiments.multilingual.multilingual_table runs/ml
