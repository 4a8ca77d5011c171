"""Truth of case lmeval_steer_llama2_7b_base_vs_chat: lm-eval 0.4.2 era (git bb3ea721), Llama-2-7b-hf (A) vs Llama-2-7b-chat-hf with model_args use_chat_template=True (B), six custom steer tasks; results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "B's model_args carry use_chat_template=True, a fork's argument, which A lacks: prompt.chat_template is recorded on B only, so it is not a 'difference' (A does not record it).",
    "Model paths are local (/data/public_models/huggingface/meta-llama/…); model_args also hold parallelize=True and trust_remote_code=True.",
    "No lm_eval_version (git bb3ea721, transformers 4.38.2); no chat_template / fewshot_as_multiturn / system_instruction keys (pre-0.4.3); dtype only in config.model_dtype.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
