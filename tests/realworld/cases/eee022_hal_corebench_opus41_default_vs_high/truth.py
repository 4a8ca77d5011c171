"""Truth of case eee022_hal_corebench_opus41_default_vs_high: Every Eval Ever 0.2.2 records of the HAL leaderboard, CORE-Bench Hard, the same model id anthropic/claude-opus-4-1 at default (A) and high (B) inference effort.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/4e204f49-b57c-4c49-ac59-7c4d43174fc6.json'
B = 'b/5c8be68c-3004-4b1d-a88e-335a4515e080.json'
NOTES = [
    "Same model_info.id on both sides; B's model_info.additional_details adds inference_effort 'high' (not in the settings vocabulary): differs is empty although the runs differ in effort.",
    "eval_library {name: HAL, version: 'unknown'}; generation_config.generation_args.agentic_eval_config lists tools; numbers in additional_details are strings ('375.11', 'True').",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, A, B, notes=NOTES), HERE)
