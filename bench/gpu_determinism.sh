#!/usr/bin/env bash
# The determinism step of the GPU check: `repaudit determinism`'s batch axis (each doc alone and among 7 and 63
# other requests) on the first ARC-Easy validation docs, in float32 and bfloat16, without and with the hf backend's
# batch-invariant mode (Thinking Machines' batch_invariant_ops, installed from a carried wheel) — writing
# OUT/determinism/*.json and the table OUT/determinism/determinism.md, printed at the end. bench/gpu_check.sh calls it
# with its own arguments before its runs; it never stops the check (its failures are lines in the table).
#
#   bash bench/gpu_determinism.sh --python PY [--wheels DIR] [--device cuda] [--model M] [--data-dir DATA] OUT
#   bash bench/gpu_determinism.sh --device cpu --limit 6 --data-dir ../shared/data OUT    # on the CPU, small
#
#   --wheels DIR   install batch-invariant-ops from DIR where the folder holds its wheel (it is not on PyPI: whoever
#                  holds the GPU carries a wheel of it); without one the batch-invariant runs say the package is missing
#   anything else goes to bench/gpu_determinism.py (python3 bench/gpu_determinism.py --help); OUT is the last
#   argument, and gpu_check.py's own options are accepted there and ignored.
#   REPAUDIT_DETERMINISM=0 skips the step; REPAUDIT_DETERMINISM_LIMIT (docs, default 100),
#   REPAUDIT_DETERMINISM_BATCHES (default 1,8,64), REPAUDIT_DETERMINISM_DTYPES (default: gpu_check's --dtypes, else
#   float32,bfloat16) and REPAUDIT_DETERMINISM_BUDGET_S (no run starts after it, default 240) size it without
#   touching gpu_check's options. On the CPU the batch-invariant runs are left out (no CPU kernels).
set -uo pipefail

PY=python3
WHEELS=""
PASS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) WHEELS="$2"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        *) PASS+=("$1"); shift ;;
    esac
done
if [ "${REPAUDIT_DETERMINISM:-1}" = "0" ]; then
    echo "gpu_determinism: skipped (REPAUDIT_DETERMINISM=0)" >&2
    exit 0
fi
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# batch_invariant_ops, on a machine set up from carried wheels only (--wheels given: the GPU check's), where that folder
# holds its wheel; its kernels need Triton (CUDA torch ships it). Without --wheels nothing is installed into the
# interpreter's environment.
if [ -n "$WHEELS" ] \
        && ! "$PY" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("batch_invariant_ops") is None)'; then
    whl=$(find "$WHEELS" -maxdepth 1 -name 'batch_invariant_ops-*.whl' 2>/dev/null | head -n 1)
    if [ -n "$whl" ]; then
        echo "gpu_determinism: installing $(basename "$whl")" >&2
        "$PY" -m pip install -q --no-index --no-deps "$whl"
    else
        echo "gpu_determinism: no batch_invariant_ops wheel in $WHEELS: the batch-invariant runs will say so" >&2
    fi
fi

export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
"$PY" "$REPO/bench/gpu_determinism.py" "${PASS[@]}"
