#!/usr/bin/env bash
# The deployed student's beam against its speed. The pipeline (pipeline.yaml) trains the teacher and the
# 6 + 1-layer student 1,500 steps each, lets val choose the student's beam among 1, 2, 3 and 5 (the
# smallest within 0.5 BLEU of the best candidate) and scores test_2016 once with val's choices. Then,
# on val, one after the other: the exported int8 student with each beam at its chosen length penalty,
# and the teacher as val chose it, each with its BLEU, chrF and sentences per second.
# Usage: bash experiments/student_search/run.sh       (again after a kill: the pipeline continues)
set -euo pipefail
ws=runs/student_search out=runs/student_search_val data=data/multi30k
s2s pipeline experiments/student_search/pipeline.yaml
chosen() {  # MODEL KEY: what val chose for the model (teacher, student)
    python -m experiments.records chosen "$ws/select_$1/selection.json" "$2"
}
score() {  # FILE NAME ENGINE RUN [OPTIONS]: one row NAME, its record and translations kept as OUT/FILE.json, .hyp
    s2s evaluate "$4" --src "$data/val.de" --ref "$data/val.en" --engine "$3" \
        --json "$out/$1.json" --out "$out/$1.hyp" "${@:5}" >/dev/null
    python -m experiments.records row "$out/$1.json" "$2"
}
mkdir -p "$out"
echo "| val, system | BLEU | chrF | sent/s |"
echo "|---|---|---|---|"
for beam in 1 2 3 5; do
    score "export_beam$beam" "export, beam $beam" ctranslate2 "$ws/export" --beam "$beam" \
        --length-penalty "$(chosen student length_penalty)"
done
score teacher "teacher, beam $(chosen teacher beam)" auto "$ws/teacher" --checkpoint "$(chosen teacher checkpoints)" \
    --beam "$(chosen teacher beam)" --length-penalty "$(chosen teacher length_penalty)"
cat "$ws/table.md"
