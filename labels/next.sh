#!/bin/sh
# Show sample sessions FROM..TO (order column of tb2-sample.tsv).
cd "$(dirname "$0")/.." && awk -F'\t' -v a="$1" -v b="$2" 'NR>1 && $1>=a && $1<=b {print "../shared/corpus-tb2/" $2}' labels/tb2-sample.tsv | xargs python labels/show.py --width "${3:-120}"
