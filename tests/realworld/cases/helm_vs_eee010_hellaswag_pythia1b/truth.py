"""Truth of case helm_vs_eee010_hellaswag_pythia1b: one HELM run (hellaswag, eleutherai/pythia-1b-v0, 10 valid
instances, 5-shot) as HELM's own run folder (A) and as the Every Eval Ever 0.1.0 record EEE's HELM converter made of
it (B, with the per-sample rows inline). A cross-format pair: the scores must agree, the instances pair by id.

Reads only the raw files beside this script (json via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = "commonsense-dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0"
B = "eee/41bb0c5a-80f1-40d3-a75e-70cd3544777c.json"
NOTES = [
    "HELM's folder name here uses '-' where HELM writes ':' (EEE renamed it for Windows); run_spec.name keeps "
    "'commonsense:dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0'.",
    "The split is 'valid' (not 'test'): HELM stats are named '<metric>@valid' in scores_a_all.",
    "B repeats its results: 24 evaluation_results all named 'multiple_choice_joint' (4 metrics x {2 unperturbed, "
    "4 robustness/fairness perturbations}); the metric is only in metric_config.evaluation_description, and "
    "min_score/max_score are null.",
    "B's generation settings live per result in evaluation_results[i].generation_config (temperature 0.0, "
    "max_tokens 1, stop_sequences ['\\n']); B records no few-shot count (A: max_train_instances 5).",
    "B's per-sample rows (detailed_evaluation_results_per_samples) hold response and ground_truth but no score; "
    "no per-sample flip can be read from B without deriving correctness, so flips are not given.",
]


def main():
    run = T.helm_run(HERE / A)
    rec = T.load_json(HERE / B)
    sa, na_a = T.helm_settings(run["run_spec"])
    sb, na_b = T.eee_settings(rec)
    gen = T.eee_task_settings(rec)["multiple_choice_joint"]
    sb.update(gen)
    na_b.update(T.greedy_na(sb))
    if sa.get("fewshot.num_fewshot", {}).get("value") == 0:
        na_a["fewshot.fewshot_split"] = "0-shot"
    settings, differs, na, why = T.combine(sa, sb, na_a, na_b)
    helm = T.helm_scores(run["stats"])
    eee = T.eee_scores(rec)["multiple_choice_joint"]
    common = {m: {"a": helm.get(f"{m}@valid"), "b": eee.get(m)}
              for m in ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match")}
    ids_a = {row["instance_id"] for row in run["per_instance_stats"]}
    ids_b = {row["sample_id"] for row in rec["detailed_evaluation_results_per_samples"]}
    truth = {"case": HERE.name, "kind": "pair", "harness_a": "HELM",
             "harness_b": T.eee_version(rec), "a": A, "b": B,
             "settings": settings, "differs": differs, "not_applicable": na, "not_applicable_reason": why,
             "task_map": {"hellaswag": {"a": T.helm_task(run["run_spec"]), "b": "multiple_choice_joint"}},
             "scores": {"hellaswag": common},
             "scores_a_all": {T.helm_task(run["run_spec"]): helm},
             "scores_b_all": T.eee_scores(rec),
             "per_doc": {"hellaswag": {"n_a": len(ids_a), "n_b": len(ids_b), "n_shared": len(ids_a & ids_b)}},
             "flips": {}, "notes": NOTES}
    T.dump(truth, HERE)


if __name__ == "__main__":
    main()
