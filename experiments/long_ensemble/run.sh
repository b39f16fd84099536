#!/usr/bin/env bash
# A second seed of the recipe beside the 4,500-step forward model of experiments/long_rerank/, as an
# ensemble whose beam the two judges of 4,500 steps rerank. The second seed is the first's config with
# train.seed=2 on the first's tokenizer, trained STEPS (again after a kill: it resumes). On val, beam 5,
# length penalty 1.0, best.pt of each: each seed alone, the two as an ensemble (`--checkpoint A
# --checkpoint B`), then the ensemble reranked at every pair of weights; test_2016 once with val's
# choice, with the paired bootstrap against the first seed's plain beam and, where its records are
# here, against the single model reranked by experiments/long_rerank/. The records are kept in
# runs/long_ensemble/seed2_STEPS/.
# Usage: bash experiments/long_ensemble/run.sh [STEPS] ["REVERSE_WEIGHTS"] ["R2L_WEIGHTS"]
#        (defaults 3000, "0 0.4 0.8" and "0 1 2"); again after a kill: it goes on.
set -euo pipefail
steps=${1:-3000} reverse_weights=${2:-0 0.4 0.8} r2l_weights=${3:-0 1 2}
data=data/multi30k first=runs/long_rerank/de_en reverse=runs/right_to_left/en_de r2l=runs/long_rerank/r2l
second=runs/long_ensemble/seed2 out=runs/long_ensemble/seed2_$steps
[ "$(python -m experiments.records finished "$r2l")" = 4500 ] \
    || bash experiments/long_rerank/run.sh 4500 4500 >/dev/null  # the forward model and both judges
if [ ! -d "$second" ]; then
    s2s train "$first/config.yaml" --set "run_dir=$second" --set train.seed=2 \
        --set "train.tokenizer_from=$first" --set "train.max_steps=$steps" >&2
elif [ "$(python -m experiments.records finished "$second")" != "$steps" ]; then
    s2s train "$second/config.yaml" --resume --set "run_dir=$second" --set "train.max_steps=$steps" >&2
fi
mkdir -p "$out"
echo "## the second seed: greedy val BLEU every 250 steps"
echo "| step | val loss | val BLEU (greedy) |"
echo "|---|---|---|"
python -m experiments.records curve "$second/metrics.jsonl"
forward=$first decode=(--beam 5 --length-penalty 1.0)
both=(--checkpoint "$first/checkpoints/best.pt" --checkpoint "$second/checkpoints/best.pt")
source experiments/rerank.sh  # score, together, grid
echo "## val, beam 5 (reverse weight / right-to-left weight)"
echo "| val | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
score val first --checkpoint best
score val second --checkpoint "$second/checkpoints/best.pt"
score val ensemble "${both[@]}"
grid "$reverse_weights" "$r2l_weights" "$out/val_ensemble.json" "${both[@]}"
name=$pair
echo "chosen on val: the ensemble with reverse weight $rw, right-to-left weight $lw"
[ "$name" = r0_l0 ] || s2s evaluate --ref "$data/val.en" --hyp "$out/val_ensemble.hyp" --hyp "$out/val_$name.hyp"
echo "## test_2016, once, with val's choices"
score test_2016_flickr first --checkpoint best
score test_2016_flickr ensemble "${both[@]}"
hyps=(--hyp "$out/test_2016_flickr_first.hyp" --hyp "$out/test_2016_flickr_ensemble.hyp")
if [ "$name" != r0_l0 ]; then
    # shellcheck disable=SC2046
    score test_2016_flickr "$name" "${both[@]}" $(together "$rw" "$lw")
    hyps+=(--hyp "$out/test_2016_flickr_$name.hyp")
fi
s2s evaluate --ref "$data/test_2016_flickr.en" "${hyps[@]}"
# against the single model reranked (experiments/long_rerank/ with both judges of 4,500 steps), where
# its records are here
for single in runs/long_rerank/de_en4500_r2l4500/test_2016_flickr_r*_l*.hyp; do
    [ -f "$single" ] && [ "$name" != r0_l0 ] && echo "## against the single model reranked" \
        && s2s evaluate --ref "$data/test_2016_flickr.en" --hyp "$single" \
            --hyp "$out/test_2016_flickr_$name.hyp"
done
