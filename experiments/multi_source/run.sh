#!/usr/bin/env bash
# The de->en recipe against the same model given French and Czech sources too (many_to_en.yaml), the
# same step budget each, one after the other: val BLEU and chrF of each (beam 5, best.pt), as a table.
# Usage: bash experiments/multi_source/run.sh [STEPS] [OUT]   (defaults: 1500, runs/multi_source)
set -euo pipefail
steps=${1:-1500} out=${2:-runs/multi_source}
budget=(--set train.max_minutes=0 --set "train.max_steps=$steps")
s2s train configs/multi30k_de_en.yaml --set "run_dir=$out/recipe" "${budget[@]}"
s2s train experiments/multi_source/many_to_en.yaml --set "run_dir=$out/many_to_en" "${budget[@]}"
echo "| $steps steps | val BLEU | val chrF |"
echo "|---|---|---|"
for name in recipe many_to_en; do
    s2s evaluate "$out/$name" --src data/multi30k/val.de --ref data/multi30k/val.en \
        --json "$out/$name.val.json" >/dev/null
    python -c "import json, sys; s = json.load(open(sys.argv[1]))['systems'][0]['scores']
print(f\"| {sys.argv[2]} | {s['bleu']['score']:.2f} | {s['chrf']['score']:.2f} |\")" "$out/$name.val.json" "$name"
done
