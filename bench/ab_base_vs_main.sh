#!/usr/bin/env bash
# A/B of whole-process wall time: issue 42's base commit against this checkout, interleaved, three times, on one
# machine in one session (docs/reference/measurements.md, "Before and after issue 42's refactor").
#   git worktree add /tmp/wt-base c543a38
#   BASE=/tmp/wt-base DATA=../shared/data bash bench/ab_base_vs_main.sh
# Prints "rep tree strategy seconds"; the run files stay in the temporary folder it names on stderr.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${BASE:-/tmp/wt-base}"
DATA="$(cd "${DATA:-$REPO/../shared/data}" && pwd)"
PY="$REPO/.venv/bin/python"
OUT=$(mktemp -d); echo "run files in $OUT" >&2
for rep in 1 2 3; do
  for tree in base main; do
    dir=$BASE; [ "$tree" = main ] && dir=$REPO
    for strat in full_sequence shared_prefix; do
      s=$(date +%s.%N)
      (cd "$OUT" && PYTHONPATH="$dir" "$PY" -m repaudit run --task arc_easy --data-dir "$DATA" --dtype float32 \
        --batch-size 8 --num-fewshot 0 --limit 200 --scoring-strategy "$strat" --no-cache \
        -o "$OUT/$tree-$strat-$rep.json" > /dev/null 2>&1)
      e=$(date +%s.%N)
      echo "$rep $tree $strat $(echo "$e - $s" | bc)"
    done
  done
done
