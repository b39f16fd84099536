#!/usr/bin/env bash
# One model for six directions against six bilingual models in the same total time, on Multi30k
# (README "Multilingual"; docs/multilingual.md has the table this makes):
#
#   scripts/fetch_multi30k.sh --langs de,en,fr,cs [--from DIR]   # DIR: a local copy; else a download
#   bash scripts/multi30k_multilingual.sh
#
# 1. six bilingual recipe models (de, fr, cs to and from English), MINUTES each (default 10, of
#    which the tokenizer and the last validation take about half a minute);
# 2. one six-direction model (configs/multi30k_multilingual.yaml) in six times that;
# 3. scripts/multi30k_multilingual_eval.sh: checkpoints and length penalties chosen on val, test_2016
#    scored once per direction, zero-shot fr->de with and without pivoting through English.
# Every step is skipped when its result exists and continues when it was interrupted: after a kill,
# run the script again. Environment: RUNS (default runs/ml), MINUTES.
set -euo pipefail
shopt -s inherit_errexit  # a failing $(command) stops the script too
runs="${RUNS:-runs/ml}"
minutes="${MINUTES:-10}"
data=data/multi30k
mkdir -p "$runs"

train() {  # train CONFIG RUN [--set ...]: skip a run finished with these settings, refuse one finished
  python -m scripts.train_once "$@"  # with others, continue an interrupted one (scripts/train_once.py)
}

# FACTOR x MINUTES, less what the recipe leaves for its tokenizer and last validation (3 of 60 minutes)
budget() { python -c "import sys; print(round(float(sys.argv[1]) * float(sys.argv[2]) * 57 / 60, 2))" "$1" "$minutes"; }

directions="de-en fr-en cs-en en-de en-fr en-cs"
for direction in $directions; do
  src=${direction%-*} tgt=${direction#*-}
  train configs/multi30k_de_en.yaml "$runs/${src}_$tgt" --set "train.max_minutes=$(budget 1)" \
    --set "data.train_src=$data/train.$src" --set "data.train_tgt=$data/train.$tgt" \
    --set "data.valid_src=$data/val.$src" --set "data.valid_tgt=$data/val.$tgt"
done
train configs/multi30k_multilingual.yaml "$runs/multilingual" \
  --set "train.max_minutes=$(budget 6)"
bash scripts/multi30k_multilingual_eval.sh "$runs"
