# The reranking studies' shell functions (experiments/rerank_together/, experiments/long_rerank/,
# experiments/long_ensemble/), sourced by their run.sh once it has set: data (Multi30k's folder), out
# (the study's folder), forward (the run whose beam is reranked), decode (an array: how it decodes),
# reverse and r2l (the two judges).

score() {  # SET NAME [OPTIONS]: one row of the table, the translations kept as OUT/SET_NAME.hyp
    local set=$1 name=$2  # a record made before (a run killed later) is not made again
    [ -f "$out/${set}_$name.json" ] || s2s evaluate "$forward" --src "$data/$set.de" --ref "$data/$set.en" \
        "${decode[@]}" --out "$out/${set}_$name.hyp" --json "$out/${set}_$name.json" "${@:3}" >/dev/null
    python -m experiments.records row "$out/${set}_$name.json" "$name"
}

together() {  # REVERSE_WEIGHT R2L_WEIGHT: the options of both judges at these weights (0: that one left out)
    local flags=()
    [ "$1" = 0 ] || flags+=(--rerank "$reverse" --rerank-weight "$1")
    [ "$2" = 0 ] || flags+=(--rerank "$r2l" --rerank-weight "$2")
    echo "${flags[@]}"
}

grid() {  # "REVERSE_WEIGHTS" "R2L_WEIGHTS" PLAIN_RECORD [OPTIONS]: a val row for every pair of weights (both
          # 0: PLAIN_RECORD, the plain beam's, without a row); sets pair (rR_lL), rw and lw to val's best
    local candidates=() r l
    for r in $1; do
        for l in $2; do
            if [ "$r$l" = 00 ]; then candidates+=("r0_l0=$3"); continue; fi
            # shellcheck disable=SC2046  # the options, split as words
            score val "r${r}_l${l}" "${@:4}" $(together "$r" "$l")
            candidates+=("r${r}_l${l}=$out/val_r${r}_l${l}.json")
        done
    done
    pair=$(python -m experiments.records best "${candidates[@]}")
    rw=${pair%_l*} rw=${rw#r} lw=${pair#*_l}
}
