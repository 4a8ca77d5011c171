"""Copy the corpus' raw files out of local git mirrors of their public repositories (provenance tool).

Each case is a list of (destination, repository, path, commit, trim) rows in ``CASES`` below. A file is copied
byte for byte with ``git --git-dir MIRROR show COMMIT:PATH``; ``trim=N`` keeps the first N lines of a JSONL file
(nothing else is changed). Every copy is recorded in ``sources.json`` (repository, path, commit, git blob id of
the original, bytes before and after, trim), from which SOURCES.md's tables are written.

Run: python tests/realworld/tools/collect.py --mirrors DIR [CASE ...]   (DIR holds a bare git mirror of each
repository as ``DIR/<owner>+<name>/repo``; not needed to use the corpus). Only the standard library.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
#: the folder of the repositories' git mirrors (``--mirrors``)
MIRRORS: Path | None = None

LMEVAL = "EleutherAI/lm-evaluation-harness"
EEE = "evaleval/every_eval_ever"
HELM = "stanford-crfm/helm"
PYTHIA = "EleutherAI/pythia"
JFIN = "pfnet-research/japanese-lm-fin-harness"
MONTY = "reinthal/monty-hall-eval"
NEMO = "NVIDIA-NeMo/Evaluator"
BODHI = "sebasmos/humbleai-bodhi"

# licences as read from each repository's LICENSE file at the commit used (see SOURCES.md)
LICENCES = {
    LMEVAL: "MIT (LICENSE.md of the upstream repository; the files come from fork/PR branches kept in its mirror, "
            "no separate licence stated for the data)",
    EEE: "MIT (LICENSE, Copyright (c) 2026 EvalEval)",
    HELM: "Apache-2.0 (LICENSE)",
    PYTHIA: "Apache-2.0 (LICENSE)",
    JFIN: "MIT (LICENSE, Copyright (c) 2023 Masanori HIRANO)",
    MONTY: "unknown (no LICENSE file in the repository)",
    NEMO: "Apache-2.0 (LICENSE)",
    BODHI: "CC BY-NC-SA 4.0 (LICENSE, Copyright (c) 2026 Sebastián Andrés Cajas Ordóñez and contributors; added to the "
           "repository three days after the commit used)",
}

CASES: dict[str, list[tuple]] = {}


def add(case, rows):
    CASES[case] = rows


def mirror(repo: str) -> Path:
    if MIRRORS is None:
        raise SystemExit("--mirrors DIR is needed: the folder of the repositories' git mirrors")
    return MIRRORS / repo.replace("/", "+") / "repo"


def git(repo, *args, binary=True):
    out = subprocess.run(["git", "--git-dir", str(mirror(repo)), *args], capture_output=True, check=True)
    return out.stdout if binary else out.stdout.decode()


def copy(case, dest, repo, path, commit, trim=None):
    blob = git(repo, "rev-parse", f"{commit}:{path}", binary=False).strip()
    full = git(repo, "rev-parse", commit, binary=False).strip()
    data = git(repo, "cat-file", "blob", blob)
    original = len(data)
    note = None
    if trim is not None:
        lines = data.split(b"\n")
        kept = lines[:trim]
        n_lines = len([ln for ln in lines if ln.strip()])
        data = b"\n".join(kept) + (b"\n" if len(lines) > trim else b"")
        note = f"first {min(trim, n_lines)} of {n_lines} lines (docs) kept"
    out = HERE / "cases" / case / dest
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return {"case": case, "file": f"cases/{case}/{dest}", "repo": repo, "path": path, "commit": full, "blob": blob,
            "licence": LICENCES[repo], "bytes_original": original, "bytes": len(data), "trimmed": note}


def main(argv):
    global MIRRORS
    if argv[:1] == ["--mirrors"] and len(argv) > 1:
        MIRRORS, argv = Path(argv[1]), argv[2:]
    manifest_path = HERE / "sources.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    wanted = argv or list(CASES)
    manifest = [m for m in manifest if m["case"] not in wanted]
    for case in wanted:
        for row in CASES[case]:
            dest, repo, path, commit, *rest = row
            manifest.append(copy(case, dest, repo, path, commit, *(rest or [None])))
            print(manifest[-1]["file"], manifest[-1]["bytes"])
    manifest.sort(key=lambda m: (m["case"], m["file"]))
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- the cases (filled in below)
# lm-evaluation-harness (fork and PR branches kept in the upstream repository's mirror)
_AF = "african_nlp_benchmarks/"
_AFC = "b97e2b227a01c2b69647142fb7658d66cd921a22"
add("lmeval_masakhaner_p2_0v5shot", [
    ("a/masakhaner_luo_prompt_2_0shot_2026-01-16T17-35-22.033409.json", LMEVAL,
     _AF + "masakhaner_luo_prompt_2_0shot_2026-01-16T17-35-22.033409.json", _AFC),
    ("a/samples_masakhaner_luo_prompt_2_2026-01-16T17-35-22.033409.jsonl", LMEVAL,
     _AF + "samples_masakhaner_luo_prompt_2_2026-01-16T17-35-22.033409.jsonl", _AFC, 100),
    ("b/masakhaner_luo_prompt_2_5shot_2026-01-16T16-59-59.899345.json", LMEVAL,
     _AF + "masakhaner_luo_prompt_2_5shot_2026-01-16T16-59-59.899345.json", _AFC),
    ("b/samples_masakhaner_luo_prompt_2_2026-01-16T16-59-59.899345.jsonl", LMEVAL,
     _AF + "samples_masakhaner_luo_prompt_2_2026-01-16T16-59-59.899345.jsonl", _AFC, 100),
])
add("lmeval_masakhaner_p3_0v5shot", [
    ("a/masakhaner_luo_prompt_3_0shot_2026-01-16T20-19-39.102073.json", LMEVAL,
     _AF + "masakhaner_luo_prompt_3_0shot_2026-01-16T20-19-39.102073.json", _AFC),
    ("a/samples_masakhaner_luo_prompt_3_2026-01-16T20-19-39.102073.jsonl", LMEVAL,
     _AF + "samples_masakhaner_luo_prompt_3_2026-01-16T20-19-39.102073.jsonl", _AFC, 60),
    ("b/masakhaner_luo_prompt_3_5shot_2026-01-16T20-39-07.271056.json", LMEVAL,
     _AF + "masakhaner_luo_prompt_3_5shot_2026-01-16T20-39-07.271056.json", _AFC),
    ("b/samples_masakhaner_luo_prompt_3_2026-01-16T20-39-07.271056.jsonl", LMEVAL,
     _AF + "samples_masakhaner_luo_prompt_3_2026-01-16T20-39-07.271056.jsonl", _AFC, 60),
])
add("lmeval_afrisenti_p1_0v5shot", [
    ("a/afrisenti_swa_prompt_1_0shot_2026-01-15T13-13-26.035414.json", LMEVAL,
     _AF + "afrisenti_swa_prompt_1_0shot_2026-01-15T13-13-26.035414.json", "01dff1e17a2c38f70e984265db0b3998febdaa0c"),
    ("b/afrisenti_swa_prompt_1_5shot_2026-01-15T13-16-16.787849.json", LMEVAL,
     _AF + "afrisenti_swa_prompt_1_5shot_2026-01-15T13-16-16.787849.json", "01dff1e17a2c38f70e984265db0b3998febdaa0c"),
])
_NT = "outputs/qwen3-8b/negotiationtom/Qwen__Qwen3-8B/"
_NTC = "6b54f107fcf8cfa12d763e5f96a60ad6159c06fd"
add("lmeval_negotiationtom_rerun_h100_l40s", [
    (f"{side}/{name}_{ts}.{ext}", LMEVAL, f"{_NT}{name}_{ts}.{ext}", _NTC)
    for side, ts in (("a", "2026-07-08T17-38-51.316967"), ("b", "2026-07-08T18-15-33.115417"))
    for name, ext in (("results", "json"), ("samples_negotiationtom_belief", "jsonl"),
                      ("samples_negotiationtom_desire", "jsonl"), ("samples_negotiationtom_intention", "jsonl"))
])
_TQ = "b4fb3df67c8953c981acb7c7ed3aab7ec935088d"
add("lmeval_truthfulqa_gen_full_vs_limit20", [
    ("a/truthfulqa_gen_neo125_2025-05-31T13-51-32.759677.json", LMEVAL,
     "results/truthfulqa_gen_neo125_2025-05-31T13-51-32.759677.json", _TQ),
    ("a/samples_truthfulqa_gen_2025-05-31T13-51-32.759677.jsonl", LMEVAL,
     "results/samples_truthfulqa_gen_2025-05-31T13-51-32.759677.jsonl", _TQ, 200),
    ("b/truthfulqa_gen_neo125_2025-05-31T14-30-51.983293.json", LMEVAL,
     "results/truthfulqa_gen_neo125_2025-05-31T14-30-51.983293.json", _TQ),
    ("b/samples_truthfulqa_gen_2025-05-31T14-30-51.983293.jsonl", LMEVAL,
     "results/samples_truthfulqa_gen_2025-05-31T14-30-51.983293.jsonl", _TQ),
])
_AS = "12ecafc603b50fddcbbf7202e40459f10a8f9c76"
add("lmeval_asdiv_batch1_vs_batch8", [
    ("a/results_2024-08-21T03-41-58.320355.json", LMEVAL,
     "results/asdiv_cot/meta-llama__Meta-Llama-3-8B-Instruct/results_2024-08-21T03-41-58.320355.json", _AS),
    ("a/samples_asdiv_2024-08-21T03-41-58.320355.jsonl", LMEVAL,
     "results/asdiv_cot/meta-llama__Meta-Llama-3-8B-Instruct/samples_asdiv_2024-08-21T03-41-58.320355.jsonl", _AS),
    ("b/results_2024-08-21T03-44-09.494230.json", LMEVAL,
     "results/asdiv/meta-llama__Meta-Llama-3-8B-Instruct/results_2024-08-21T03-44-09.494230.json", _AS),
    ("b/samples_asdiv_2024-08-21T03-44-09.494230.jsonl", LMEVAL,
     "results/asdiv/meta-llama__Meta-Llama-3-8B-Instruct/samples_asdiv_2024-08-21T03-44-09.494230.jsonl", _AS),
])
_PP = "results/asdiv/..__prompt-pursuit__results__aug17__gsm8k_8shot_pursue_numq_1000_r16_lr1e-6__epoch_"
add("lmeval_asdiv_cot_peft_epoch_series", [
    ("epoch_5/results_2024-08-21T04-41-31.747564.json", LMEVAL, _PP + "5/results_2024-08-21T04-41-31.747564.json", _AS),
    ("epoch_20/results_2024-08-21T04-37-55.218014.json", LMEVAL, _PP + "20/results_2024-08-21T04-37-55.218014.json", _AS),
    ("epoch_62/results_2024-08-21T04-34-32.637369.json", LMEVAL, _PP + "62/results_2024-08-21T04-34-32.637369.json", _AS),
])
add("lmeval_api_gpt4o_mini_limit1000_vs_full", [
    ("a/results_2025-06-30T19-37-57.457759.json", LMEVAL,
     "results/all_materials.json/gpt-4o-mini/results_2025-06-30T19-37-57.457759.json", "289e1ae721d09b20b5b0a93741f1cea225cd7a42"),
    ("b/results_2025-06-30T19-47-16.374067.json", LMEVAL,
     "results/all_materials.json/gpt-4o-mini/results_2025-06-30T19-47-16.374067.json", "289e1ae721d09b20b5b0a93741f1cea225cd7a42"),
])
add("lmeval_rwkv7_fla_vs_pytorch", [
    ("a/results_2025-02-25T19-55-56.987927.json", LMEVAL,
     "results/RWKV-block__rwkv7-1.5B-world-fla/results_2025-02-25T19-55-56.987927.json", "69c001c2fd0af1facc9038ba17c2b2240c71e4c1"),
    ("b/results_2025-02-25T19-51-18.697369.json", LMEVAL,
     "results/RWKV-block__rwkv7-1.5B-world-pytorch/results_2025-02-25T19-51-18.697369.json", "d0d75756294dd51f193ba8a8735d74f12cdb3844"),
])
add("lmeval_bigrefactor_flan_t5_vs_vicuna_massive", [
    ("a/flan_t5_xxl_massive-de-100.json", LMEVAL, "results/t5/flan_t5_xxl/flan_t5_xxl_massive-de-100.json",
     "d6150b93a6ecc4a42d909851ebfe0b484a76232e"),
    ("b/vicuna-7b_massive-de-100.json", LMEVAL, "results/vicuna/vicuna-7b/vicuna-7b_massive-de-100.json",
     "d6150b93a6ecc4a42d909851ebfe0b484a76232e"),
])
_ST = "e93c191b1ea057d99095656c5067a638ebc087d4"
add("lmeval_steer_llama2_7b_base_vs_chat", [
    ("a/results_2024-06-03T01-54-41.753933.json", LMEVAL,
     "lm_evals/Llama-2-7b-hf/result-steer.jsonl/__data__public_models__huggingface__meta-llama__Llama-2-7b-hf/"
     "results_2024-06-03T01-54-41.753933.json", _ST),
    ("b/results_2024-06-03T02-45-05.614529.json", LMEVAL,
     "lm_evals/Llama-2-7b-chat-hf/result_chat-steer.jsonl/__data__public_models__huggingface__meta-llama__"
     "Llama-2-7b-chat-hf/results_2024-06-03T02-45-05.614529.json", _ST),
])
add("lmeval_vllm_nl2foam_sft_vs_qwen3", [
    ("a/results_2025-12-17T20-24-58.608862.json", LMEVAL, "all-results-original/results_2025-12-17T20-24-58.608862.json",
     "cdeb043d46584f5c6640bc3a01c1a6bd90153e39"),
    ("b/results_2025-12-17T21-17-00.220744.json", LMEVAL, "all-results-original/results_2025-12-17T21-17-00.220744.json",
     "cdeb043d46584f5c6640bc3a01c1a6bd90153e39"),
])
add("lmeval_qwen25_7b_dir043_vs_dir048", [
    ("a/results_2025-03-06T21-57-53.230631.json", LMEVAL,
     "results-0.4.3/Qwen__Qwen2.5-7B/results_2025-03-06T21-57-53.230631.json", "9c0ba6ce45"),
    ("b/results_2025-03-18T00-03-26.972068.json", LMEVAL,
     "results-0.4.8/qwen__qwen2.5-7B/results_2025-03-18T00-03-26.972068.json", "d825fd4b11"),
])
# pfnet-research/japanese-lm-fin-harness
add("lmeval03_jfin_swallow7b_base_vs_instruct", [
    ("a/Swallow-7b-hf/result.json", JFIN, "models/tokyotech-llm/Swallow-7b-hf/result.json",
     "226b353fbdb32306f280b45332e4155c109df4fb"),
    ("b/Swallow-7b-instruct-hf/result.json", JFIN, "models/tokyotech-llm/Swallow-7b-instruct-hf/result.json",
     "226b353fbdb32306f280b45332e4155c109df4fb"),
])
add("lmeval_jfin_qwen14b_base_vs_chat", [
    ("a/Qwen-14B/result-default.json", JFIN, "models/Qwen/Qwen-14B/result-default.json",
     "965d21fa1aee3b5da752c653bcce55cac6b359b6"),
    ("b/Qwen-14B-Chat/result-default.json", JFIN, "models/Qwen/Qwen-14B-Chat/result-default.json",
     "965d21fa1aee3b5da752c653bcce55cac6b359b6"),
])
# GPT-NeoX evaluate.py outputs (EleutherAI/pythia)
_PY = "a19eecb807ec2c79a39ebf18108816e6ffffc1d5"
add("neox_pythia19m_intervention_series", [
    (name, PYTHIA, "evals/bias-evals/" + name, _PY) for name in (
        "intervention-19m-deduped-step134000_eval_results_01-21-2023-21-04-18.json",
        "intervention-19m-deduped-step136000_eval_results_01-21-2023-21-00-16.json",
        "intervention-19m-deduped-step138000_eval_results_01-21-2023-21-41-10.json",
        "intervention-19m-deduped-step140000_eval_results_01-21-2023-21-41-21.json",
        "intervention-19m-deduped-step143000_eval_results_01-21-2023-21-41-13.json")
])
add("neox_pythia410m_winobias_series", [
    (f"eval_results_410m-deduped_{step}.json", PYTHIA,
     f"evals/bias-evals/winobias/intervene_7/410M/eval_results_410m-deduped_{step}.json", _PY)
    for step in range(134000, 144000, 1000)
])
add("lmeval03_pythia14b_0shot_vs_5shot", [
    ("a/1.4b_step143000.json", PYTHIA, "evals/pythia-v1/pythia-1.4b/zero-shot/1.4b_step143000.json", _PY),
    ("b/1.4b-5shot_step143000.json", PYTHIA, "evals/pythia-v1/pythia-1.4b/five-shot/1.4b-5shot_step143000.json", _PY),
])
# HELM run folders (stanford-crfm/helm, a branch that committed benchmark_output)
_HC = "865aaae70bbd4acd49cc67eaf022eb57404a71c6"
_HELM_FILES = ("run_spec.json", "scenario.json", "scenario_state.json", "stats.json", "per_instance_stats.json")


def _helm(case, runs_dir, names):
    add(case, [(f"{name}/{f}", HELM, f"{runs_dir}/{name}/{f}", _HC) for name in names for f in _HELM_FILES])


_helm("helm_bbq_v4_claude35_vs_gpt4turbo", "benchmark_output_TRUE_latest/runs/v4", [
    "bbq:subject=all,method=multiple_choice_joint,model=anthropic_claude-3-5-sonnet-20240620",
    "bbq:subject=all,method=multiple_choice_joint,model=openai_gpt-4-turbo-2024-04-09"])
_helm("helm_simple_safety_v3_claude35_vs_gpt4o", "benchmark_output_TRUE_latest/runs/v3", [
    "simple_safety_tests:model=anthropic_claude-3-5-sonnet-20240620",
    "simple_safety_tests:model=openai_gpt-4o-2024-05-13"])
# Every Eval Ever records (evaleval/every_eval_ever history: the data/ folder before the move to a datastore)
_EH = "9bce4136e789ec006c62582f5f9d107d20f8b398"
add("helm_vs_eee010_hellaswag_pythia1b", [
    (f"commonsense-dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0/{f}", EEE,
     f"tests/data/helm/commonsense-dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0/{f}", _EH)
    for f in _HELM_FILES
] + [("eee/41bb0c5a-80f1-40d3-a75e-70cd3544777c.json", EEE,
      "data/helm_local_evals/hellaswag/eleutherai/pythia-1b-v0/41bb0c5a-80f1-40d3-a75e-70cd3544777c.json",
      "ddfe8ff5181887bd6bd1d219245c123db12061fe")])
add("eee010_helm_instruct_claude_vs_gpt35", [
    ("a/c4e55239-581b-433f-82bc-68a690f59e4a.json", EEE,
     "data/helm_instruct/anthropic/claude-v1.3/c4e55239-581b-433f-82bc-68a690f59e4a.json",
     "f169a3a2f83d05b6c06ab9219a9fdbdd0a1d5679"),
    ("b/a6cf2367-3615-421e-9bb6-a0c3f1d5f1ed.json", EEE,
     "data/helm_instruct/openai/gpt-3.5-turbo-0613/a6cf2367-3615-421e-9bb6-a0c3f1d5f1ed.json",
     "f169a3a2f83d05b6c06ab9219a9fdbdd0a1d5679"),
])
add("eee_010_vs_020_helm_instruct_claude", [
    ("a/c4e55239-581b-433f-82bc-68a690f59e4a.json", EEE,
     "data/helm_instruct/anthropic/claude-v1.3/c4e55239-581b-433f-82bc-68a690f59e4a.json",
     "f169a3a2f83d05b6c06ab9219a9fdbdd0a1d5679"),
    ("b/e5e98ffa-3c2d-42d4-86a9-0cb46a71c684.json", EEE,
     "data/helm_instruct/anthropic/claude-v1.3/e5e98ffa-3c2d-42d4-86a9-0cb46a71c684.json",
     "c6fc3e16aca4681a4bd085da41320e0673708319"),
])
add("eee020_hfopenllm_yi34b_32k_vs_chat16k", [
    ("a/f63536ed-752b-4538-9b92-2514a617a4bf.json", EEE,
     "data/hfopenllm_v2/01-ai/Yi-1.5-34B-32K/f63536ed-752b-4538-9b92-2514a617a4bf.json",
     "af911c4e1026f20dbe4413a1588621980b324f76"),
    ("b/8ff13de2-ea43-4392-992f-ba70b6023e96.json", EEE,
     "data/hfopenllm_v2/01-ai/Yi-1.5-34B-Chat-16K/8ff13de2-ea43-4392-992f-ba70b6023e96.json",
     "af911c4e1026f20dbe4413a1588621980b324f76"),
])
add("eee022_hal_corebench_opus41_default_vs_high", [
    ("a/4e204f49-b57c-4c49-ac59-7c4d43174fc6.json", EEE,
     "data/hal-corebench-hard/anthropic/claude-opus-4-1/4e204f49-b57c-4c49-ac59-7c4d43174fc6.json",
     "2f1fea41e2753bc01665dda3578858d59f2aa464"),
    ("b/5c8be68c-3004-4b1d-a88e-335a4515e080.json", EEE,
     "data/hal-corebench-hard/anthropic/claude-opus-4-1/5c8be68c-3004-4b1d-a88e-335a4515e080.json",
     "2f1fea41e2753bc01665dda3578858d59f2aa464"),
])
add("eee020_ai2arc_inspect_qwen_vs_sonnet", [
    ("a/75e7b3c4-5d2f-4526-aef0-9ccd88690f5a.json", EEE,
     "data/ai2_arc/ollama/qwen2.5-0.5b/75e7b3c4-5d2f-4526-aef0-9ccd88690f5a.json",
     "dcb00c1e24e70bc64d77da661709d39be04310f4"),
    ("b/0479dd23-e008-47f5-a790-15e7cbb08fc7.json", EEE,
     "data/ai2_arc/anthropic/claude-sonnet-4-0/0479dd23-e008-47f5-a790-15e7cbb08fc7.json",
     "dcb00c1e24e70bc64d77da661709d39be04310f4"),
])
# inspect_ai logs
add("inspect_json_arc_qwen_vs_sonnet", [
    ("a/data_arc_qwen.json", EEE, "tests/data/inspect/data_arc_qwen.json", _EH),
    ("b/data_arc_sonnet.json", EEE, "tests/data/inspect/data_arc_sonnet.json", _EH),
])
_MH = "b4dddea5ece4da8b4a4f7f2c91091721ce7bd4da"
add("inspect_eval_monty_gpt54_vs_opus46", [
    ("a/2026-05-10T20-58-36-00-00_standard-monty_W4Ra3jVavj7SFWbgZcwg8V.eval", MONTY,
     "logs/2026-05-10T20-58-36-00-00_standard-monty_W4Ra3jVavj7SFWbgZcwg8V.eval", _MH),
    ("b/2026-05-10T20-58-37-00-00_standard-monty_VVvHt7fHStAE3EdQXXnT9Z.eval", MONTY,
     "logs/2026-05-10T20-58-37-00-00_standard-monty_VVvHt7fHStAE3EdQXXnT9Z.eval", _MH),
])
# issue 61: a HELM pair whose per-instance judge scores are not 0/1; EEE records with recorded uncertainty; NeMo
# Evaluator's own documented outputs; another tool's file to be refused by name
_helm("helm_harm_bench_v3_llama3_8b_vs_mixtral", "benchmark_output_TRUE_latest/runs/v3", [
    "harm_bench:model=meta_llama-3-8b", "harm_bench:model=mistralai_mixtral-8x22b"])
_GM = "f36d4352586f30206580a25e71dd5f4265a002fc"
add("eee020_globalmmlulite_qwen3_vs_claude37", [
    ("a/c8ab4e94-d8e8-417f-be18-fececf3c815c.json", EEE,
     "data/global-mmlu-lite/alibaba/qwen3-235b-a22b-instruct-2507/c8ab4e94-d8e8-417f-be18-fececf3c815c.json", _GM),
    ("b/acd2082a-ce0c-418f-9383-f3c9f11735a2.json", EEE,
     "data/global-mmlu-lite/anthropic/claude-3-7-sonnet-20250219/acd2082a-ce0c-418f-9383-f3c9f11735a2.json", _GM),
])
_NE_A, _NE_B = "5ff5d42ca833b572db4611f2f354fdce03498c41", "019eb94d1855dbac40a932643e1e1690c9df345d"
add("nemo_results_yaml_llama31_8b_vs_llama32_3b", [
    ("a/results.yaml", NEMO, "docs/about/concepts/_snippets/results.yaml", _NE_A),
    ("b/results.yaml", NEMO, "docs/about/concepts/_snippets/results.yaml", _NE_B),
])
add("nemo_processed_export_2508_vs_2510", [
    ("a/processed_results.json", NEMO, "docs/about/concepts/_snippets/processed_results.json", _NE_A),
    ("b/processed_results.json", NEMO, "docs/about/concepts/_snippets/processed_results.json", _NE_B),
])
add("refused_simple_evals_healthbench_metrics", [
    ("healthbench_consensus_gpt-4o-mini_20260113_121108.json", BODHI,
     "Results/healthbench_consensus_gpt-4o-mini_20260113_121108.json", "7e1ac0b43f4ce5c8104ccc784c443f83f9f798a9"),
])

if __name__ == "__main__":
    main(sys.argv[1:])
