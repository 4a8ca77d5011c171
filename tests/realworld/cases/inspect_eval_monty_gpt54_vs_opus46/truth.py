"""Truth of case inspect_eval_monty_gpt54_vs_opus46: inspect_ai 0.3.220 .eval logs (Zstandard members) of an agentic Monty Hall task, openrouter/openai/gpt-5.4 (A) vs openrouter/anthropic/claude-opus-4-6 (B), 50 samples each.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/2026-05-10T20-58-36-00-00_standard-monty_W4Ra3jVavj7SFWbgZcwg8V.eval'
B = 'b/2026-05-10T20-58-37-00-00_standard-monty_VVvHt7fHStAE3EdQXXnT9Z.eval'
NOTES = [
    ".eval ZIP with Zstandard (method 93) members that Python 3.11's zipfile cannot read; header.json + samples/<id>_epoch_1.json.",
    "The system prompt comes from plan.steps[0] (system_message solver); eval.config.message_limit 14; no generation config recorded.",
    "Every one of the 50 samples scores 'C' on both sides (no flips); the aggregate that differs, mean_reward 1360 vs 1400, comes from score metadata (reward), not from the C/I values.",
]

if __name__ == "__main__":
    T.dump(T.inspect_pair(HERE, A, B, notes=NOTES), HERE)
