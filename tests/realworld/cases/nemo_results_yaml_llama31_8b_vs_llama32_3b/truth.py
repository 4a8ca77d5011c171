"""Truth of case nemo_results_yaml_llama31_8b_vs_llama32_3b: the results.yaml NeMo Evaluator's documentation shows
("Evaluation Output", docs/about/concepts/_snippets/results.yaml) at two commits — GPQA-Diamond through simple_evals,
Llama-3.1-8B-Instruct with temperature 0.6, top-p 0.95, 8192 tokens, 5 samples and a system message (A) vs
Llama-3.2-3B-Instruct with the harness's own values (temperature 0.0, top-p 1e-05, 4096 tokens), 10 samples (B).

Reads only the raw files beside this script (yaml/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "B's config.params temperature, top_p and max_new_tokens are null (left to the harness); the command it ran passes "
    "--temperature 0.0 --top_p 1e-05 --max_tokens 4096: those are the recorded values (key 'command: --flag').",
    "B decodes greedily (temperature 0.0): its top_p is n/a.",
    "A's endpoint adapter has a system_message interceptor ('Think step by step.'); B's has none.",
    "Scores: results.tasks.gpqa_diamond.metrics.score.scores.micro (key score_micro), stderr from its stats.",
]

if __name__ == "__main__":
    T.dump(T.nemo_results_pair(HERE, "a/results.yaml", "b/results.yaml", notes=NOTES), HERE)
