"""Truth of case lmeval_api_gpt4o_mini_limit1000_vs_full: lm-eval 0.4.8, openai-chat-completions model=gpt-4o-mini, a 12-task materials suite with --limit 1000 (A) vs without a limit (B; 11 tasks); results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "An API backend: model=gpt-4o-mini in model_args (no pretrained=); config.device is null (recorded as null: no device for an API).",
    "chat_template is the empty string \"\" (chat_template_sha null): not null, so applied per the rule.",
    "limit 1000 vs null, and A has a 12th task (polymer_tg_prediction, mae Infinity with stderr NaN) that B lacks.",
    "Every task's test_split is 'train' (custom tasks); fewshot_split 'train' is n/a at 0-shot.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
