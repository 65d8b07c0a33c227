#!/bin/sh
# Show sample sessions FROM..TO (the order column of the tb2-sample*.tsv files).
cd "$(dirname "$0")/.." && cat labels/tb2-sample*.tsv | awk -F'\t' -v a="$1" -v b="$2" '$1 ~ /^[0-9]+$/ && $1>=a && $1<=b {print "../shared/corpus-tb2/" $2}' | xargs python labels/show.py --width "${3:-120}"
