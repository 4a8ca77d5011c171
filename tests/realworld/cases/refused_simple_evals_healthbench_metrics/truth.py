"""Truth of case refused_simple_evals_healthbench_metrics: a metrics file openai/simple-evals writes (HealthBench
Consensus, gpt-4o-mini, 10 samples: ``score`` beside ``<metric>:bootstrap_std`` and ``<metric>:n_samples``). repaudit
does not read simple-evals' files: compare must refuse it in one line that names simple-evals.

Reads nothing but the file's name (no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

if __name__ == "__main__":
    T.dump(T.refusal(HERE, "healthbench_consensus_gpt-4o-mini_20260113_121108.json", "simple-evals"), HERE)
