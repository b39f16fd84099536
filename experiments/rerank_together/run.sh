#!/usr/bin/env bash
# Reranking the recipe's beam by a reverse and a right-to-left model together (`--rerank A --rerank B`,
# their weighted scores summed), against each alone, at one step budget: the forward model and the
# right-to-left model of experiments/right_to_left/ (run first if they are not there), an en->de model of
# the same config and steps, then on val every pair of weights of the grid, and test_2016 once with
# val's choice, with the paired bootstrap against the plain beam and the right-to-left model alone.
# Usage: bash experiments/rerank_together/run.sh ["REVERSE_WEIGHTS" ["R2L_WEIGHTS"]]
#        (defaults "0 0.1 0.3 0.6" and "2 3"); again after a kill: a finished training is not redone.
set -euo pipefail
reverse_weights=${1:-0 0.1 0.3 0.6} r2l_weights=${2:-2 3}
data=data/multi30k out=runs/rerank_together forward=runs/student_search/teacher
r2l=runs/right_to_left/r2l reverse=runs/right_to_left/en_de
[ -f "$r2l/finished.json" ] || bash experiments/right_to_left/run.sh >/dev/null
[ -f "$reverse/finished.json" ] || s2s train configs/multi30k_en_de.yaml --set "run_dir=$reverse" \
    --set train.max_minutes=0 --set train.max_steps=1500 --set train.keep_checkpoints=5
mkdir -p "$out"
choice=runs/student_search/select_teacher/selection.json
chosen() { python -m experiments.records chosen "$choice" "$1"; }
decode=(--checkpoint "$(chosen checkpoints)" --beam "$(chosen beam)" --length-penalty "$(chosen length_penalty)")
source experiments/rerank.sh  # score, together, grid
echo "## val (the forward run as val chose it; reverse weight / right-to-left weight)"
echo "| val | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val beam
grid "$reverse_weights" "$r2l_weights" "$out/val_beam.json"
name=$pair
echo "chosen on val: reverse weight $rw, right-to-left weight $lw"
alone=$(python -m experiments.records best $(for lw in $r2l_weights; do echo "r0_l$lw=$out/val_r0_l$lw.json"; done))
alone=${alone#*_l}
echo "the right-to-left model alone, val's weight: $alone"
s2s evaluate --ref "$data/val.en" --hyp "$out/val_beam.hyp" --hyp "$out/val_r0_l$alone.hyp" --hyp "$out/val_$name.hyp"
echo "## test_2016, once, with val's choices"
score test_2016_flickr beam
# shellcheck disable=SC2046
score test_2016_flickr "r0_l$alone" $(together 0 "$alone")
[ "$name" = "r0_l$alone" ] || score test_2016_flickr "$name" $(together "$rw" "$lw")
s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$out/test_2016_flickr_beam.hyp" \
    --hyp "$out/test_2016_flickr_r0_l$alone.hyp" --hyp "$out/test_2016_flickr_$name.hyp"
