#!/usr/bin/env bash
# Put Multi30k (task 1, German-English) raw text under data/multi30k/:
#   train.{de,en}  val.{de,en}  test_2016_flickr.{de,en}
#
#   scripts/fetch_multi30k.sh                      download from the public multi30k/dataset repository
#   scripts/fetch_multi30k.sh --from DIR           copy a local copy of the files from DIR
#   scripts/fetch_multi30k.sh --out DIR ...        write somewhere else
#   scripts/fetch_multi30k.sh --langs de,en,fr,cs  these languages of task 1 (default de,en; all four
#                                                  are parallel line by line: the multilingual recipe)
#   scripts/fetch_multi30k.sh --mono [--from DIR]  task 2's monolingual captions instead, train.{1..5}.{en,de}
#                                                  into data/multi30k_mono/ (back-translation; --from names
#                                                  a local copy of them)
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
src=""
out=""
langs="de,en"
task="task1"
while [ $# -gt 0 ]; do
  case "$1" in
    --from) src="${2:?--from needs a directory}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --langs) langs="${2:?--langs needs codes such as de,en,fr,cs}"; shift 2 ;;
    --mono) task="task2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

files=""
if [ "$task" = task2 ]; then
  files=$(echo train.{1,2,3,4,5}.{en,de})
else
  for lang in ${langs//,/ }; do
    case "$lang" in
      de|en|fr|cs) files="$files train.$lang val.$lang test_2016_flickr.$lang" ;;
      *) echo "error: Multi30k task 1 has de, en, fr and cs, not '$lang'" >&2; exit 2 ;;
    esac
  done
fi
if [ -z "$out" ]; then
  out="data/multi30k"
  [ "$task" = task2 ] && out="data/multi30k_mono"
fi
if [ -n "$src" ] && [ "$(realpath -m "$src")" = "$(realpath -m "$out")" ]; then
  echo "error: --out $out is --from $src: the copy would be made over the files it reads" >&2; exit 2
fi
base="https://raw.githubusercontent.com/multi30k/dataset/master/data/$task/raw"
mkdir -p "$out"
for f in $files; do
  if [ -n "$src" ]; then
    if [ -f "$src/$f" ]; then
      cp "$src/$f" "$out/$f"
    elif [ -f "$src/$f.gz" ]; then
      gunzip -c "$src/$f.gz" > "$out/$f"
    else
      echo "error: $src has no $f" >&2; exit 2
    fi
  else
    curl -fsSL "$base/$f.gz" | gunzip -c > "$out/$f.tmp" && mv "$out/$f.tmp" "$out/$f" || {
      rm -f "$out/$f.tmp"
      echo "error: could not download $f; offline? use --from DIR with a local copy" >&2
      exit 2
    }
  fi
done
for f in $files; do printf '%8d %s\n' "$(wc -l < "$out/$f")" "$out/$f"; done
