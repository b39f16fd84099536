#!/usr/bin/env bash
# The recipe trained three times longer: one de->en model of 4,500 steps, the compute of the three
# 1,500-step trainings behind the reranked two-seed ensemble (experiments/noisy_channel/). It prints
# the training's learning curve (greedy val BLEU and val loss every 250 steps) and scores on val, with
# beam 5: best.pt and the average of the last 5 checkpoints, then the better of them reranked by the
# en->de recipe of 1,500 steps (the noisy channel) at each weight. What val chose is scored on
# test_2016 once, with the paired bootstrap against the plain beam.
# Usage: bash experiments/training_length/run.sh [STEPS] [OUT] [REVERSE_STEPS] [WEIGHTS]
#        (defaults: 4500, runs/training_length, 1500, "0.1 0.2 0.3"); a finished training is not redone.
set -euo pipefail
steps=${1:-4500} out=${2:-runs/training_length} reverse_steps=${3:-1500} weights=${4:-0.1 0.2 0.3}
data=data/multi30k run=$out/de_en reverse=$out/en_de
train() {  # CONFIG RUN STEPS: trained unless it finished before
    [ -f "$2/finished.json" ] || s2s train "$1" --set "run_dir=$2" --set train.max_minutes=0 \
        --set "train.max_steps=$3"
}
score() {  # SET NAME CHECKPOINT [OPTIONS]: one row of the table, the translations kept as OUT/SET_NAME.hyp
    s2s evaluate "$run" --checkpoint "$3" --src "$data/$1.de" --ref "$data/$1.en" --beam 5 \
        --out "$out/$1_$2.hyp" --json "$out/$1_$2.json" "${@:4}" >/dev/null
    python -m experiments.records row "$out/$1_$2.json" "$1, $2"
}
train configs/multi30k_de_en.yaml "$run" "$steps"
echo "| step | val loss | val BLEU (greedy) |"
echo "|---|---|---|"
python -m experiments.records curve "$run/metrics.jsonl"
s2s average "$run" --last 5 >/dev/null
echo "| set, system (beam 5) | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val best best
score val averaged averaged
checkpoint=$(python -m experiments.records best best="$out/val_best.json" averaged="$out/val_averaged.json")
train configs/multi30k_en_de.yaml "$reverse" "$reverse_steps"
for w in $weights; do
    score val "rerank_$w" "$checkpoint" --rerank "$reverse" --rerank-weight "$w"
done
candidates=()
for w in $weights; do candidates+=("$w=$out/val_rerank_$w.json"); done
reranked=$(python -m experiments.records best "${candidates[@]}")
echo "chosen on val: $checkpoint, reranked at weight $reranked"
score test_2016_flickr "$checkpoint" "$checkpoint"
score test_2016_flickr "rerank_$reranked" "$checkpoint" --rerank "$reverse" --rerank-weight "$reranked"
s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$out/test_2016_flickr_$checkpoint.hyp" \
    --hyp "$out/test_2016_flickr_rerank_$reranked.hyp"
