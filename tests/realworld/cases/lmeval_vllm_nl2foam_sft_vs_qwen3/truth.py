"""Truth of case lmeval_vllm_nl2foam_sft_vs_qwen3: lm-eval 0.4.9.2 (vllm, tensor_parallel_size 8, --gen_kwargs max_gen_toks=4096), a local SFT checkpoint (A) vs Qwen/Qwen3-8B (B) on two nl2foam generate_until tasks; results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "config.gen_kwargs is a dict {'max_gen_toks': 4096} (the CLI --gen_kwargs) and the task configs' generation_kwargs already hold it too; the truth gives the CLI key.",
    "No do_sample and no temperature is recorded for these generate_until tasks: sampling settings are not recorded (vLLM's/lm-eval's defaults are not in the file).",
    "fewshot_as_multiturn is null; model_args dict with tensor_parallel_size 8; A's model is a local SFT checkpoint path.",
    "llm_judge is on a 0-100 scale; bleu/rouge 0-1; bert_score 0-1.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
