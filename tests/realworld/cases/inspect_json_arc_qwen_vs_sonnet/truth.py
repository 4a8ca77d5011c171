"""Truth of case inspect_json_arc_qwen_vs_sonnet: inspect_ai 0.3.138 .json logs of inspect_evals/arc_easy: ollama/qwen2.5:0.5b with --limit 3 (A) vs anthropic/claude-sonnet-4-0 with --limit 5 (B).

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/data_arc_qwen.json'
B = 'b/data_arc_sonnet.json'
NOTES = [
    "limit 3 vs 5 in eval.config; samples 1-3 are shared: qwen is right on sample 1 only, sonnet on all, so 2 and 3 go wrong -> right.",
    "Scores 'C'/'I' are inspect's CORRECT/INCORRECT (read as 1/0). No generation config is recorded (model_generate_config {}).",
    "Sonnet's output content is a list of content blocks, qwen's a string.",
]

if __name__ == "__main__":
    T.dump(T.inspect_pair(HERE, A, B, notes=NOTES), HERE)
