#!/usr/bin/env bash
# The recipe's encoder twice as deep, against the recipe, at 1,500 steps each. Both are the long
# pipeline's teacher and its selection on val (beam 5; best.pt or the average of the last 5 checkpoints;
# length penalty 0.6, 1.0 or 1.4): the recipe's is experiments/student_search/'s first two steps, the
# deeper one's pipeline.yaml. It prints each training's learning curve, each candidate on val, and then,
# one after the other, each model decoding val as val chose it (BLEU, chrF, sentences per second).
# Nothing is scored on test.
# Usage: bash experiments/model_size/run.sh        (again after a kill: the pipelines continue)
set -euo pipefail
data=data/multi30k out=runs/model_size/val
declare -A workspace=([recipe]=runs/student_search [encoder6]=runs/model_size/encoder6)
s2s pipeline experiments/student_search/pipeline.yaml --until select_teacher
s2s pipeline experiments/model_size/pipeline.yaml --until select_teacher
chosen() {  # NAME KEY: what val chose for that model
    python -m experiments.records chosen "${workspace[$1]}/select_teacher/selection.json" "$2"
}
mkdir -p "$out"
for name in recipe encoder6; do
    echo "## $name: greedy val BLEU every 250 steps"
    echo "| step | val loss | val BLEU (greedy) |"
    echo "|---|---|---|"
    python -m experiments.records curve "${workspace[$name]}/teacher/metrics.jsonl"
    echo "## $name: the candidates on val (beam 5)"
    echo "| checkpoint, length penalty | BLEU | chrF | sent/s |"
    echo "|---|---|---|---|"
    for record in "${workspace[$name]}"/select_teacher/*_lp*.json; do
        python -m experiments.records row "$record" "$(basename "$record" .json)"
    done
done
echo "## each as val chose it, one after the other"
echo "| val, model | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
for name in recipe encoder6; do
    s2s evaluate "${workspace[$name]}/teacher" --src "$data/val.de" --ref "$data/val.en" \
        --checkpoint "$(chosen "$name" checkpoints)" --beam "$(chosen "$name" beam)" \
        --length-penalty "$(chosen "$name" length_penalty)" \
        --json "$out/$name.json" --out "$out/$name.hyp" >/dev/null
    python -m experiments.records row "$out/$name.json" "$name, $(chosen "$name" checkpoints | xargs basename)"
done
echo "## the two on val, paired bootstrap (the first is the baseline)"
s2s evaluate --ref "$data/val.en" --hyp "$out/recipe.hyp" --hyp "$out/encoder6.hyp"
