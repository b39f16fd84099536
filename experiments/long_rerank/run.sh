#!/usr/bin/env bash
# The two judges of experiments/rerank_together/ (a right-to-left model and an en->de model, each of
# 1,500 steps) reranking a forward model trained three times as long. The forward model is the
# recipe's teacher of experiments/student_search/ (1,500 steps), copied and trained on to STEPS with
# `s2s train --resume` (its inverse-sqrt schedule does not depend on train.max_steps, so this is the
# training of STEPS from the start); with R2L_STEPS above 1,500 the right-to-left model is trained on
# the same way. On val, beam 5, length penalty 1.0: best.pt and the average of the last 5 checkpoints,
# then the better one reranked by each judge alone and by both at each pair of weights; test_2016
# once with val's choices, with the paired bootstrap against the plain beam. The records (translations
# and scores) of each pair of lengths are kept in runs/long_rerank/de_enSTEPS_r2lR2L_STEPS/.
# Usage: bash experiments/long_rerank/run.sh [STEPS] [R2L_STEPS] ["REVERSE_WEIGHTS"] ["R2L_WEIGHTS"]
#        (defaults 4500, 1500, "0 0.1 0.2 0.4 0.6 0.8" and "0 1 2 3"); again after a kill: it goes on.
set -euo pipefail
steps=${1:-4500} r2l_steps=${2:-1500} reverse_weights=${3:-0 0.1 0.2 0.4 0.6 0.8} r2l_weights=${4:-0 1 2 3}
data=data/multi30k runs=runs/long_rerank reverse=runs/right_to_left/en_de
out=$runs/de_en${steps}_r2l${r2l_steps}  # the records of this pair of training lengths
[ -f runs/right_to_left/r2l/finished.json ] || bash experiments/right_to_left/run.sh >/dev/null
[ -f runs/rerank_together/val_beam.json ] || bash experiments/rerank_together/run.sh >/dev/null
on_to() {  # FROM TO STEPS: a copy of the run FROM trained on to STEPS (FROM itself when STEPS is its own)
    local from=$1 to=$2 steps=$3
    if [ "$(python -m experiments.records finished "$from")" = "$steps" ]; then echo "$from"; return; fi
    [ -d "$to" ] || cp -a "$from" "$to"
    [ "$(python -m experiments.records finished "$to")" = "$steps" ] \
        || s2s train "$to/config.yaml" --resume --set "run_dir=$to" --set "train.max_steps=$steps" >&2
    echo "$to"
}
mkdir -p "$out"
forward=$(on_to runs/student_search/teacher "$runs/de_en" "$steps")
r2l=$(on_to runs/right_to_left/r2l "$runs/r2l" "$r2l_steps")
echo "## the forward run: greedy val BLEU every 250 steps"
echo "| step | val loss | val BLEU (greedy) |"
echo "|---|---|---|"
python -m experiments.records curve "$forward/metrics.jsonl"
[ -f "$forward/checkpoints/averaged.pt" ] && [ "$forward/checkpoints/averaged.pt" -nt "$forward/finished.json" ] \
    || s2s average "$forward" --last 5 >/dev/null
decode=(--beam 5 --length-penalty 1.0)
source experiments/rerank.sh  # score, together, grid
echo "## val, beam 5 (reverse weight / right-to-left weight)"
echo "| val | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val best --checkpoint best
score val averaged --checkpoint averaged
checkpoint=$(python -m experiments.records best best="$out/val_best.json" averaged="$out/val_averaged.json")
grid "$reverse_weights" "$r2l_weights" "$out/val_$checkpoint.json" --checkpoint "$checkpoint"
name=$pair
echo "chosen on val: $checkpoint, reverse weight $rw, right-to-left weight $lw"
[ "$name" = r0_l0 ] || s2s evaluate --ref "$data/val.en" --hyp "$out/val_$checkpoint.hyp" --hyp "$out/val_$name.hyp"
echo "## test_2016, once, with val's choices"
score test_2016_flickr "$checkpoint" --checkpoint "$checkpoint"
if [ "$name" != r0_l0 ]; then
    # shellcheck disable=SC2046
    score test_2016_flickr "$name" --checkpoint "$checkpoint" $(together "$rw" "$lw")
    s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$out/test_2016_flickr_$checkpoint.hyp" \
        --hyp "$out/test_2016_flickr_$name.hyp"
fi
