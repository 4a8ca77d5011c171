"""Truth of case eee010_helm_instruct_claude_vs_gpt35: Every Eval Ever 0.1.0 leaderboard records (helm_instruct), anthropic/claude-v1.3 (A) vs openai/gpt-3.5-turbo-0613 (B); 0-5 scales declared in metric_config.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/c4e55239-581b-433f-82bc-68a690f59e4a.json'
B = 'b/a6cf2367-3615-421e-9bb6-a0c3f1d5f1ed.json'
NOTES = [
    "EEE 0.1.0 leaderboard scrape: source_data is a top-level list of URLs; per-result metric_config declares min_score 0 and max_score 5 (harmlessness) or 1 (win rate), lower_is_better false.",
    "generation_config holds HELM's subset/evaluator lists, not generation settings.",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, A, B, notes=NOTES), HERE)
