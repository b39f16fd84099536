#!/usr/bin/env bash
# Reranking the beam by a reverse model (noisy channel) and an ensemble of two seeds, against the
# recipe's beam, at one step budget: three trainings one after the other (de->en seeds 1 and 2, the
# second on the first's tokenizer, and en->de), then every setting on val, and the settings val chose
# on test_2016 once, with the paired bootstrap against the plain beam.
# Usage: bash experiments/noisy_channel/run.sh [STEPS] [OUT] [WEIGHTS]
#        (defaults: 1500, runs/noisy_channel, "0.1 0.2 0.3 0.6 1.0"); a finished training is not redone.
set -euo pipefail
steps=${1:-1500} out=${2:-runs/noisy_channel} weights=${3:-0.1 0.2 0.3 0.6 1.0}
data=data/multi30k
budget=(--set train.max_minutes=0 --set "train.max_steps=$steps")
train() {  # NAME CONFIG [OPTIONS]: trained unless it finished before
    [ -f "$out/$1/finished.json" ] || s2s train "$2" --set "run_dir=$out/$1" "${budget[@]}" "${@:3}"
}
train de_en configs/multi30k_de_en.yaml
train de_en_seed2 configs/multi30k_de_en.yaml --set train.seed=2 --set "train.tokenizer_from=$out/de_en"
train en_de configs/multi30k_en_de.yaml
ensemble=(--checkpoint "$out/de_en/checkpoints/best.pt" --checkpoint "$out/de_en_seed2/checkpoints/best.pt")
score() {  # SET NAME [OPTIONS]: one row of the table, the translations kept as OUT/SET_NAME.hyp
    local set=$1 name=$2
    s2s evaluate "$out/de_en" --src "$data/$set.de" --ref "$data/$set.en" --beam 5 \
        --out "$out/${set}_$name.hyp" --json "$out/${set}_$name.json" "${@:3}" >/dev/null
    python -m experiments.records row "$out/${set}_$name.json" "$name"
}
echo "| val, beam 5 | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val beam
for w in $weights; do score val "rerank_$w" --rerank "$out/en_de" --rerank-weight "$w"; done
score val ensemble "${ensemble[@]}"
for w in $weights; do score val "ensemble_rerank_$w" "${ensemble[@]}" --rerank "$out/en_de" --rerank-weight "$w"; done
best() {  # PREFIX: the weight whose val BLEU was highest
    local candidates=()
    for w in $weights; do candidates+=("$w=$out/val_$1_$w.json"); done
    python -m experiments.records best "${candidates[@]}"
}
single=$(best rerank) both=$(best ensemble_rerank)
echo "chosen on val: rerank weight $single alone, $both with the ensemble"
score test_2016_flickr beam
score test_2016_flickr "rerank_$single" --rerank "$out/en_de" --rerank-weight "$single"
score test_2016_flickr ensemble "${ensemble[@]}"
score test_2016_flickr "ensemble_rerank_$both" "${ensemble[@]}" --rerank "$out/en_de" --rerank-weight "$both"
s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$out/test_2016_flickr_beam.hyp" \
    --hyp "$out/test_2016_flickr_rerank_$single.hyp" --hyp "$out/test_2016_flickr_ensemble.hyp" \
    --hyp "$out/test_2016_flickr_ensemble_rerank_$both.hyp"
