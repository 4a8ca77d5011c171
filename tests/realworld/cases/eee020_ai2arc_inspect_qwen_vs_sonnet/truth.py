"""Truth of case eee020_ai2arc_inspect_qwen_vs_sonnet: Every Eval Ever 0.2.0 records converted from inspect_ai logs (the logs of case inspect_json_arc_qwen_vs_sonnet): ollama/qwen2.5-0.5b (A, 3 samples) vs anthropic/claude-sonnet-4-0 (B, 5 samples); their instance-level sidecars were never committed.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/75e7b3c4-5d2f-4526-aef0-9ccd88690f5a.json'
B = 'b/0479dd23-e008-47f5-a790-15e7cbb08fc7.json'
NOTES = [
    "Converted from the inspect logs of case inspect_json_arc_qwen_vs_sonnet: model_info.id 'ollama/qwen2.5-0.5b' although the log says 'ollama/qwen2.5:0.5b' (the converter replaced ':').",
    "detailed_evaluation_results points to instance_level_data/*.jsonl files (with checksum and total_rows 3 and 5) that were never committed.",
    "evaluation_name is the scorer name 'choice'; samples_number 2376 is the dataset size, not the number evaluated.",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, A, B, notes=NOTES), HERE)
