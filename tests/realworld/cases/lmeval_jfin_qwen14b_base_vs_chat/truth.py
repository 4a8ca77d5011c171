"""Truth of case lmeval_jfin_qwen14b_base_vs_chat: lm-eval 0.4 (vllm) results of the same fork's later runs: Qwen-14B (A) vs Qwen-14B-Chat (B), five finance tasks; results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "vllm with model_args string pretrained=…,trust_remote_code=True,dtype=bfloat16; device null; the files differ in git_hash (277416b vs 7817456) beside the model.",
    "Results hold acc, acc_norm and map/map_N(_norm) metrics; chabsa f1 stderr is 'N/A'.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, a="a/Qwen-14B", b="b/Qwen-14B-Chat", notes=NOTES), HERE)
