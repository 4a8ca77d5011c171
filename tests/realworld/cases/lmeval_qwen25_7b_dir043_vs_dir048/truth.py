"""Truth of case lmeval_qwen25_7b_dir043_vs_dir048: Qwen2.5-7B results from a repository's results-0.4.3/ (A) and results-0.4.8/ (B) folders: neither file records lm_eval_version; batch size, dtype, device and the model id's spelling differ; 79 vs 15 result rows.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "The folder names say 0.4.3 and 0.4.8 but neither file has lm_eval_version; A has no git_hash, B git ab90eba (transformers 4.49.0 in both).",
    "model id spelled 'Qwen/Qwen2.5-7B' (A) vs 'qwen/qwen2.5-7B' (B): a differing model.name by the letter of the files.",
    "dtype: A only in config.model_dtype ('bfloat16'), B in model_args dtype=float32; device 'cuda' vs null; batch_size '4' vs '8'.",
    "A has 79 result rows incl. the mmlu group hierarchy with fewshot_split 'dev' (0-shot, so n/a); B has 15; 15 tasks are shared.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
