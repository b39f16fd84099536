#!/usr/bin/env bash
# Minimum Bayes risk against the plain beam: each setting scored on val, then the chosen one on a
# test set once, with the paired bootstrap. Usage: bash experiments/mbr/run.sh RUN DATA_DIR
# (DATA_DIR holds Multi30k: val.de, val.en, test_2016_flickr.de, test_2016_flickr.en).
set -euo pipefail
run=$1 data=$2 out=${3:-$(mktemp -d)}
for setting in "--beam 5" "--beam 5 --mbr chrf" "--beam 5 --mbr bleu" "--beam 10 --mbr chrf" "--beam 10 --mbr bleu"; do
    name=$(echo "$setting" | tr -d ' -')
    # shellcheck disable=SC2086  # the setting is several options
    s2s evaluate "$run" --src "$data/val.de" --ref "$data/val.en" --out "$out/val_$name.hyp" \
        --json "$out/val_$name.json" $setting >/dev/null
    python -c "import json, sys; d = json.load(open(sys.argv[1])); s = d['systems'][0]['scores']
print(f\"{sys.argv[2]:24} val BLEU {s['bleu']['score']:.2f}  chrF {s['chrf']['score']:.2f}  \"
      f\"{d['decode']['sentences_per_second']:.1f} sent/s\")" "$out/val_$name.json" "$setting"
done
# the test set, once: the plain beam and the setting chosen on val
s2s evaluate "$run" --src "$data/test_2016_flickr.de" --ref "$data/test_2016_flickr.en" \
    --out "$out/test_beam.hyp" --beam 5 >/dev/null
s2s evaluate "$run" --src "$data/test_2016_flickr.de" --ref "$data/test_2016_flickr.en" \
    --out "$out/test_mbr.hyp" --beam 5 --mbr chrf >/dev/null
s2s evaluate --hyp "$out/test_beam.hyp" --hyp "$out/test_mbr.hyp" --ref "$data/test_2016_flickr.en"
