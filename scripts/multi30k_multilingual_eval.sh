#!/usr/bin/env bash
# Score what scripts/multi30k_multilingual.sh trained, choosing every setting on val:
#   bash scripts/multi30k_multilingual_eval.sh [RUNS]        (default runs/ml)
# - each bilingual run: scripts/multi30k_eval.sh (best.pt or the average of the last 5 checkpoints,
#   length penalty 0.6 / 1.0 / 1.4, the best on val scored on test_2016_flickr once);
# - the six-direction run: the same candidates, each decoded on all six val sets; one checkpoint
#   and length penalty for all directions, the best mean val BLEU (scripts/select_on_val.py --mean),
#   then each direction's test set once;
# - zero-shot fr->de with that choice (--to de on French sources), and pivoted through English
#   (--pivot en: fr->en, then en->de), on val and test.
# python -m scripts.multilingual_table RUNS prints the table. Finished steps are skipped on a rerun.
# PRECISION (default auto) is passed to every decode, as in multi30k_eval.sh.
set -euo pipefail
shopt -s inherit_errexit  # a failing $(command) stops the script too
runs="${1:-runs/ml}"
data=data/multi30k
directions="de-en fr-en cs-en en-de en-fr en-cs"
export PRECISION="${PRECISION:-auto}"

for direction in $directions; do
  src=${direction%-*} tgt=${direction#*-}
  [ -f "$runs/${src}_$tgt/eval/test.json" ] || bash scripts/multi30k_eval.sh "$runs/${src}_$tgt" "$src" "$tgt"
done

run="$runs/multilingual" out="$runs/multilingual/eval"
mkdir -p "$out"
if [ ! -f "$run/checkpoints/averaged.pt" ]; then
  kept=$(find "$run/checkpoints" -maxdepth 1 -name 'step_*.pt' | wc -l)
  s2s average "$run" --last $(( kept < 5 ? kept : 5 )) --output averaged
fi
folders=()
for direction in $directions; do
  src=${direction%-*} tgt=${direction#*-}
  folders+=("$out/$direction")
  mkdir -p "$out/$direction"
  for checkpoint in best averaged; do
    for lp in 0.6 1.0 1.4; do
      record="$out/$direction/val_${checkpoint}_lp$lp.json"
      [ -f "$record" ] || s2s evaluate "$run" --to "$tgt" --checkpoint "$checkpoint" --beam 5 --precision "$PRECISION" \
        --length-penalty "$lp" --src "$data/val.$src" --ref "$data/val.$tgt" \
        --out "${record%.json}.hyp" --json "$record" > /dev/null
    done
  done
done
choice=$(python -m scripts.select_on_val --mean "$out" "${folders[@]}")  # "CHECKPOINT LP MEAN_VAL_BLEU"
read -r checkpoint lp _ <<< "$choice"
cat "$out/val_table.txt"
echo "selected on the mean of val: checkpoint $checkpoint, beam 5, length penalty $lp"
settings=(--checkpoint "$checkpoint" --beam 5 --length-penalty "$lp" --precision "$PRECISION")
for direction in $directions fr-de; do
  src=${direction%-*} tgt=${direction#*-}
  mkdir -p "$out/$direction"
  for split in val test_2016_flickr; do
    record="$out/$direction/$split.json"
    [ -f "$record" ] || s2s evaluate "$run" --to "$tgt" "${settings[@]}" --src "$data/$split.$src" \
      --ref "$data/$split.$tgt" --out "$out/$direction/$split.hyp" --json "$record" > /dev/null
  done
done
# fr->de through English (--pivot en): the model's own fr->en, then its en->de of that
mkdir -p "$out/fr-en-de"
for split in val test_2016_flickr; do
  record="$out/fr-en-de/$split.json"
  [ -f "$record" ] || s2s evaluate "$run" --to de --pivot en "${settings[@]}" --src "$data/$split.fr" \
    --ref "$data/$split.de" --out "$out/fr-en-de/$split.hyp" --json "$record" > /dev/null
done
python -m scripts.multilingual_table "$runs"
