#!/usr/bin/env bash
# Reranking the recipe's beam by a right-to-left model of the same budget (model.right_to_left),
# against the plain beam: the recipe's teacher at 1,500 steps and its choice on val
# (experiments/student_search/'s first two steps), a right-to-left run of the same config and steps on
# its tokenizer, then on val the plain beam, each rerank weight and the right-to-left model alone, and
# test_2016 once with val's weight, with the paired bootstrap against the plain beam.
# Usage: bash experiments/right_to_left/run.sh [WEIGHTS]   (default "0.1 0.2 0.3 0.6 1.0");
#        again after a kill: a finished training is not redone.
set -euo pipefail
weights=${1:-0.1 0.2 0.3 0.6 1.0}
data=data/multi30k out=runs/right_to_left forward=runs/student_search/teacher
s2s pipeline experiments/student_search/pipeline.yaml --until select_teacher
choice=runs/student_search/select_teacher/selection.json
chosen() { python -m experiments.records chosen "$choice" "$1"; }
[ -f "$out/r2l/finished.json" ] || s2s train configs/multi30k_de_en.yaml --set "run_dir=$out/r2l" \
    --set train.max_minutes=0 --set train.max_steps=1500 --set train.keep_checkpoints=5 \
    --set model.right_to_left=true --set "train.tokenizer_from=$forward"
echo "## the right-to-left run: greedy val BLEU every 250 steps"
echo "| step | val loss | val BLEU (greedy) |"
echo "|---|---|---|"
python -m experiments.records curve "$out/r2l/metrics.jsonl"
as_chosen=(--checkpoint "$(chosen checkpoints)" --beam "$(chosen beam)" --length-penalty "$(chosen length_penalty)")
score() {  # SET NAME RUN [OPTIONS]: one row of the table, the translations kept as OUT/SET_NAME.hyp
    local set=$1 name=$2 run=$3
    s2s evaluate "$run" --src "$data/$set.de" --ref "$data/$set.en" \
        --out "$out/${set}_$name.hyp" --json "$out/${set}_$name.json" "${@:4}" >/dev/null
    python -m experiments.records row "$out/${set}_$name.json" "$name"
}
echo "## val (the forward run as val chose it)"
echo "| val | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val beam "$forward" "${as_chosen[@]}"
for w in $weights; do
    score val "rerank_$w" "$forward" "${as_chosen[@]}" --rerank "$out/r2l" --rerank-weight "$w"
done
score val r2l_alone "$out/r2l" --beam 5
candidates=()
for w in $weights; do candidates+=("$w=$out/val_rerank_$w.json"); done
w=$(python -m experiments.records best "${candidates[@]}")
echo "chosen on val: weight $w"
s2s evaluate --ref "$data/val.en" --hyp "$out/val_beam.hyp" --hyp "$out/val_rerank_$w.hyp"
echo "## test_2016, once, with val's choices"
score test_2016_flickr beam "$forward" "${as_chosen[@]}"
score test_2016_flickr "rerank_$w" "$forward" "${as_chosen[@]}" --rerank "$out/r2l" --rerank-weight "$w"
s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$out/test_2016_flickr_beam.hyp" \
    --hyp "$out/test_2016_flickr_rerank_$w.hyp"
