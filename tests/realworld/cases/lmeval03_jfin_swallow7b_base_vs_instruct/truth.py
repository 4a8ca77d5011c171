"""Truth of case lmeval03_jfin_swallow7b_base_vs_instruct: lm-eval 0.3-format results of a Japanese finance fork: Swallow-7b-hf (A) vs Swallow-7b-instruct-hf (B); per-task num_fewshot as a list, versioned task names that differ between the files.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "lm-eval 0.3 (jp-stable fork) files: config.num_fewshot is a list in the order of the (sorted) task names, as the fork's main.py sorts the task list before pairing it with the --num_fewshot list. The repository's harness.sh lists the instruct run's tasks as chabsa,cma_basics,cpa_audit,security_sales_1,fp2 with '1,3,3,4,0', so the run used fp2=4 and security_sales_1=0 (the script meant the reverse).",
    "Task names carry prompt versions and differ between the files (chabsa-1.0-0.5 vs chabsa-1.0-0.6, fp2-1.0-0.2 vs fp2-1.0-0.3, security_sales_1 vs security_sales_1-1.0-0.1.2, cma_basics vs cma_basics-1.0-0.1); only cpa_audit-1.0-0.2.1 has the same name on both sides.",
    "batch_size null, device null, no_cache true, description_dict {}; chabsa rows have acc/f1 without stderr.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, a="a/Swallow-7b-hf", b="b/Swallow-7b-instruct-hf", notes=NOTES), HERE)
