#!/usr/bin/env bash
# The augmentation experiment (README.md here, docs/augmentation.md): the Multi30k de->en recipe trained
# with and without augmentation for the same number of steps, both scored on val and test_2016_flickr as
# given and modified (upper, title, typos, nopunct; --seed 1), and the two compared on each set as given
# by paired bootstrap. From the repository root:
#   bash experiments/augmentation/augment_quality.sh STEPS [OUT]      e.g. 1200 runs/augment_quality
# Writes OUT/{off,on}/ (the runs), OUT/{off,on}/SET.json and .hyp (the scores), OUT/SET.bootstrap.json,
# and prints the table (python -m experiments.augmentation.augment_table OUT). A run whose best.pt
# exists is not trained again. Both decode with s2s's own decoder in fp32, beam 5, at the checkpoint
# each chose on val.
set -euo pipefail
steps="${1:?steps}"; out="${2:-runs/augment_quality}"
data="${DATA:-data/multi30k}"
declare -A config=([off]=configs/multi30k_de_en.yaml [on]=configs/multi30k_de_en_augment.yaml)
for arm in off on; do
  if [ ! -f "$out/$arm/checkpoints/best.pt" ]; then
    s2s train "${config[$arm]}" --set "run_dir=$out/$arm" --set "train.max_steps=$steps" \
      --set train.max_minutes=0
  fi
  for set in val test_2016_flickr; do
    s2s evaluate "$out/$arm" --src "$data/$set.de" --ref "$data/$set.en" --engine s2s --precision fp32 \
      --augment upper,title,typos,nopunct --seed 1 --out "$out/$arm/$set.hyp" --json "$out/$arm/$set.json" \
      > /dev/null
  done
done
for set in val test_2016_flickr; do
  s2s evaluate --hyp "$out/off/$set.hyp" --hyp "$out/on/$set.hyp" --ref "$data/$set.en" \
    --json "$out/$set.bootstrap.json" > /dev/null
done
python -m experiments.augmentation.augment_table "$out"
