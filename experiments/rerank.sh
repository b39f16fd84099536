# The reranking studies' shell functions (experiments/rerank_together/, experiments/long_rerank/),
# sourced by their run.sh once it has set: data (Multi30k's folder), out (the study's folder), forward
# (the run whose beam is reranked), decode (an array: how it decodes), reverse and r2l (the two judges).

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
