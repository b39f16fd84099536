#!/usr/bin/env bash
# Back-translation and distillation on Multi30k de->en, end to end, with plain s2s commands
# (docs/distillation.md has the table this makes and why each step is what it is):
#
#   scripts/fetch_multi30k.sh [--from DIR]                # DIR: a local copy; else a download
#   scripts/fetch_multi30k.sh --mono [--from DIR]
#   bash scripts/multi30k_bt_distill.sh
#
# Every step is skipped when its result exists and continues when it was interrupted: after a kill,
# run the script again. Environment:
#   RUNS             where the runs go (default runs/bt)
#   MINUTES          each recipe-size training (default 25)
#   STUDENT_MINUTES  each student (default 30)
#   BT               0: no back-translation (steps 1-4 train de->en only), the recipe is the teacher
#   TEACHER_ENGINE   ctranslate2: the teacher's chosen checkpoint is exported in int8 and decodes the
#                    distillation corpora with CTranslate2 (1.4-2x s2s's speed on the CPUs measured); default s2s
#   SHORTLIST        K > 0: the student's CTranslate2 int8 export is also scored and timed with
#                    `s2s export --shortlist K` (default 0: not)
#   DISTILL          sources: the distilled student learns the teacher's translations of the
#                    training sources alone (no caption decode; the variant config); default all
#   STUDENT_INIT     teacher: both students start as the teacher shrunk to one decoder layer (its
#                    embeddings and chosen layers, the *_student_shrunk* configs) instead of from
#                    random weights; default scratch
#   STUDENT_WARMUP   N: both students warm up over N steps (train.warmup_steps) instead of their
#                    configs' (500 from scratch): a budget that ends near step 500 needs a shorter one
#   VARIANTS         1: also the student variant of step 7b
# Data stays in data/multi30k, data/multi30k_mono and data/bt (the corpora the configs name).
set -euo pipefail
shopt -s inherit_errexit  # a failing $(command) stops the script too
runs="${RUNS:-runs/bt}"
minutes="${MINUTES:-25}"
student_minutes="${STUDENT_MINUTES:-30}"
bt="${BT:-1}" teacher_engine="${TEACHER_ENGINE:-s2s}" shortlist="${SHORTLIST:-0}" distill="${DISTILL:-all}"
student_init="${STUDENT_INIT:-scratch}"
case "$student_init" in scratch | teacher) ;; *) echo "error: STUDENT_INIT=$student_init: scratch or teacher" >&2; exit 2 ;; esac
case "$distill" in all | sources) ;; *) echo "error: DISTILL=$distill: all or sources" >&2; exit 2 ;; esac
case "$teacher_engine" in s2s | ctranslate2) ;; *) echo "error: TEACHER_ENGINE=$teacher_engine: s2s or ctranslate2" >&2; exit 2 ;; esac
data=data/multi30k mono=data/multi30k_mono work=data/bt
mkdir -p "$runs" "$work"

train() {  # train CONFIG RUN [--set ...]: skip a run finished with these settings, refuse one finished
  python -m scripts.train_once "$@"  # with others, continue an interrupted one (scripts/train_once.py)
}

evaluate() {  # choose checkpoint and length penalty on val, score test once (multi30k_eval.sh)
  if [ ! -f "$1/eval/test.json" ]; then
    bash scripts/multi30k_eval.sh "$1" de en
  elif [ ! -f "$1/eval/selection.json" ]; then  # evaluated before the choice was kept as JSON
    python -m scripts.select_on_val "$1/eval" > /dev/null
  fi
}

selected() {  # the checkpoint, length penalty and val BLEU multi30k_eval.sh chose for RUN
  python -m scripts.select_on_val "$1/eval" --show
}

unseen() {  # unseen LANG: task 2's captions in LANG that are not task 1's training side, each once
  [ -f "$work/mono.$1" ] && return
  LC_ALL=C sort -u "$mono"/train.{1,2,3,4,5}."$1" | grep -v '^$' | grep -vxF -f "$data/train.$1" \
    > "$work/mono.$1.tmp"
  mv "$work/mono.$1.tmp" "$work/mono.$1"
}

# 1. the recipe in both directions: de->en is the baseline, en->de makes the synthetic sources
train configs/multi30k_de_en.yaml "$runs/de_en" --set "train.max_minutes=$minutes"
candidates=("$runs/de_en")
if [ "$bt" = 1 ]; then
  train configs/multi30k_en_de.yaml "$runs/en_de" --set "train.max_minutes=$minutes"

  # 2. in-domain English captions that are not task 1's training targets
  unseen en

  # 3. back-translate them (beam search; resumable: a rerun continues where a kill stopped it)
  [ -f "$work/mono.bt.de" ] || s2s translate "$runs/en_de" -i "$work/mono.en" -o "$work/mono.bt.de"

  # 4. de->en on the parallel data plus the tagged synthetic pairs, in the baseline's time
  train configs/multi30k_de_en_bt.yaml "$runs/de_en_bt" --set "train.max_minutes=$minutes"
  candidates+=("$runs/de_en_bt")
fi
for run in "${candidates[@]}"; do evaluate "$run"; done

# 5. the teacher: the better on val, with the checkpoint and length penalty chosen there
teacher=$(for run in "${candidates[@]}"; do
  choice=$(selected "$run")
  echo "${choice##* } $run"
done | sort -rn | head -1 | cut -d' ' -f2)
choice=$(selected "$teacher")
read -r checkpoint lp _ <<< "$choice"
echo "teacher: $teacher (checkpoint $checkpoint, beam 5, length penalty $lp)" | tee "$runs/teacher.txt"

# 6. sequence-level distillation: the teacher translates the training sources, and the in-domain
# German captions that are not training sources (more of what the student should imitate)
decoder=("$teacher" --checkpoint "$checkpoint")
if [ "$teacher_engine" = ctranslate2 ]; then  # the same checkpoint, exported in int8
  [ -d "$runs/teacher_ct2" ] || s2s export "$teacher" "$runs/teacher_ct2" --checkpoint "$checkpoint" --quantize int8
  decoder=("$runs/teacher_ct2" --engine ctranslate2)
  [ -f "$runs/teacher_ct2_val.hyp" ] || s2s translate "${decoder[@]}" --beam 5 --length-penalty "$lp" \
    -i "$data/val.de" -o "$runs/teacher_ct2_val.hyp"  # what int8 costs the teacher, on val
  [ -f "$runs/teacher_ct2_val.json" ] || s2s evaluate --hyp "$runs/teacher_ct2_val.hyp" --ref "$data/val.en" \
    --json "$runs/teacher_ct2_val.json"
fi
corpora=("$data/train.de:train")
if [ "$distill" = all ]; then
  unseen de
  corpora+=("$work/mono.de:mono")
fi
for corpus in "${corpora[@]}"; do
  out="$work/${corpus##*:}.distilled.en"
  [ -f "$out" ] || s2s translate "${decoder[@]}" --beam 5 --length-penalty "$lp" -i "${corpus%:*}" -o "$out"
done

# 7. the student architecture, without and with the teacher, in equal time; with STUDENT_INIT=teacher
# both start from the teacher's chosen checkpoint, shrunk to the student's layers
student_configs=configs/multi30k_de_en_student start=()
if [ "$student_init" = teacher ]; then
  student_configs=configs/multi30k_de_en_student_shrunk
  start=(--set "train.init_from=$teacher" --set "train.init_checkpoint=$checkpoint")
fi
[ -n "${STUDENT_WARMUP:-}" ] && start+=(--set "train.warmup_steps=$STUDENT_WARMUP")
train "$student_configs.yaml" "$runs/student" --set "train.max_minutes=$student_minutes" "${start[@]}"
distilled="$runs/student_distilled" config="${student_configs}_distilled.yaml"
if [ "$distill" = sources ]; then
  distilled="$runs/student_distilled_sources" config="${student_configs}_distilled_sources.yaml"
fi
train "$config" "$distilled" --set "train.max_minutes=$student_minutes" "${start[@]}"
evaluate "$runs/student"
evaluate "$distilled"
students="$runs/student,$distilled"

# 7b. with VARIANTS=1, the variant distilled from the training sources alone (30 more minutes)
if [ "${VARIANTS:-0}" = 1 ] && [ "$distill" = all ]; then
  train "${student_configs}_distilled_sources.yaml" "$runs/student_distilled_sources" \
    --set "train.max_minutes=$student_minutes" "${start[@]}"
  evaluate "$runs/student_distilled_sources"
  students="$students,$runs/student_distilled_sources"
fi

# 8. the distilled student in int8: s2s's own (--quantize int8) and a CTranslate2 int8 export
student="$distilled"
choice=$(selected "$student")
read -r checkpoint lp _ <<< "$choice"
for split in val test_2016_flickr; do
  [ -f "$student/eval/int8_$split.json" ] || s2s evaluate "$student" --checkpoint "$checkpoint" \
    --beam 5 --length-penalty "$lp" --quantize int8 --src "$data/$split.de" --ref "$data/$split.en" \
    --json "$student/eval/int8_$split.json" > /dev/null
done
sizes=(0)  # CTranslate2 int8 exports: without a shortlist, and with SHORTLIST=K pieces per source piece
[ "$shortlist" -gt 0 ] && sizes+=("$shortlist")
for k in "${sizes[@]}"; do
  tag="" how=()
  [ "$k" -gt 0 ] && tag="_sl$k" how=(--shortlist "$k")
  export="${distilled}_ct2$tag"
  [ -d "$export" ] || s2s export "$student" "$export" --checkpoint "$checkpoint" --quantize int8 "${how[@]}"
  for split in val test_2016_flickr; do
    hyp="$runs/ct2_int8${tag}_$split.hyp"  # beside the export, never in it (CTranslate2 reads it whole)
    [ -f "$hyp" ] || s2s translate "$export" --engine ctranslate2 --beam 5 --length-penalty "$lp" \
      -i "$data/$split.de" -o "$hyp"
    [ -f "$runs/ct2_int8${tag}_$split.json" ] || s2s evaluate --hyp "$hyp" --ref "$data/$split.en" \
      --json "$runs/ct2_int8${tag}_$split.json" > /dev/null
  done
done

# 9. decoding speed side by side (beam 5, each setting in a fresh process), then the table
timed=$(IFS=,; echo "${candidates[*]}")
[ -f "$runs/speed.json" ] || python -m scripts.bench --sections runs --beams 5 --repeat 2 \
  --shortlist "$shortlist" --runs "$timed,$students" \
  --src "$data/test_2016_flickr.de" --ref "$data/test_2016_flickr.en" --json "$runs/speed.json"
python -m scripts.distill_table "$runs"
