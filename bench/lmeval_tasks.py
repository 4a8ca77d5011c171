"""lm-evaluation-harness 0.4.13 task definitions that read ``shared/data`` instead of the hub.

Each mirror reproduces the built-in task's prompt, target, choices, splits, metrics and few-shot
rules with ``dataset_path: json``, so lm-eval can run offline on exactly the docs repaudit reads.
Used by the benchmarks in this folder; not part of the package.
"""

from __future__ import annotations

import json
from pathlib import Path

# task -> (file under data dir, extra header lines, doc_to_text, doc_to_target, doc_to_choice)
SIMPLE = {
    "arc_easy": ("arc/ARC-Easy_validation.jsonl", "dataset_name: ARC-Easy\n", "Question: {{question}}\\nAnswer:",
                 '"{{choices.label.index(answerKey)}}"', '"{{choices.text}}"'),
    "arc_challenge": ("arc/ARC-Challenge_validation.jsonl", "dataset_name: ARC-Challenge\n",
                      "Question: {{question}}\\nAnswer:", '"{{choices.label.index(answerKey)}}"',
                      '"{{choices.text}}"'),
    "piqa": ("piqa/validation.jsonl", "", "Question: {{goal}}\\nAnswer:", "label", '"{{[sol1, sol2]}}"'),
    "sciq": ("sciq/validation.jsonl", "", "{{support.lstrip()}}\\nQuestion: {{question}}\\nAnswer:", "3",
             '"{{[distractor1, distractor2, distractor3, correct_answer]}}"'),
    "hellaswag": ("hellaswag/validation.jsonl", "process_docs: !function bench_utils.hellaswag\n", "{{query}}",
                  '"{{label}}"', "choices"),
}

_YAML = """task: {task}
dataset_path: json
{header}dataset_kwargs:
  data_files:
    validation: {path}
output_type: multiple_choice
validation_split: validation
doc_to_text: "{text}"
doc_to_target: {target}
doc_to_choice: {choice}
metric_list:
  - metric: acc
  - metric: acc_norm
metadata:
  version: 1.0
"""

_MMLU_YAML = """task: mmlu_{subject}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {test}
    dev: {dev}
process_docs: !function bench_utils.subject_{subject}
output_type: multiple_choice
test_split: test
fewshot_split: dev
fewshot_config:
  sampler: first_n
description: "The following are multiple choice questions (with answers) about {spaced}.\\n\\n"
doc_to_text: "{{{{question.strip()}}}}\\nA. {{{{choices[0]}}}}\\nB. {{{{choices[1]}}}}\\nC. {{{{choices[2]}}}}\\nD. {{{{choices[3]}}}}\\nAnswer:"
doc_to_choice: ["A", "B", "C", "D"]
doc_to_target: answer
metric_list:
  - metric: acc
metadata:
  version: 1.0
"""

# HellaSwag's process_docs as the built-in task defines it (bracketed WikiHow markers dropped,
# " [title]" turned into a sentence break), written out here for the json mirror.
_UTILS = '''import re


def _clean(text):
    text = text.strip().replace(" [title]", ". ")
    text = re.sub("\\\\[.*?\\\\]", "", text)
    return text.replace("  ", " ")


def hellaswag(dataset):
    def one(doc):
        ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
        return {"query": _clean(doc["activity_label"] + ": " + ctx),
                "choices": [_clean(e) for e in doc["endings"]], "gold": int(doc["label"])}
    return dataset.map(one)


def _subject(name, keep):
    def select(dataset):
        rows = dataset.filter(lambda d: d["subject"] == name)
        return rows.select(range(min(keep, len(rows))))
    return select
'''


def mmlu_subject_counts(data_dir: Path, limit: int) -> dict[str, int]:
    """How many of the first ``limit`` MMLU test docs (repaudit's order) fall in each subject."""
    counts: dict[str, int] = {}
    with (data_dir / "mmlu" / "test.jsonl").open() as f:
        for i, line in enumerate(f):
            if i >= limit:
                break
            s = json.loads(line)["subject"]
            counts[s] = counts.get(s, 0) + 1
    return counts


def mmlu_per_subject(data_dir: Path, n: int) -> tuple[dict[str, int], list[int]]:
    """The first ``n`` test docs of every MMLU subject: (docs kept per subject, their repaudit doc ids)."""
    counts: dict[str, int] = {}
    ids: list[int] = []
    with (data_dir / "mmlu" / "test.jsonl").open() as f:
        for i, line in enumerate(f):
            s = json.loads(line)["subject"]
            if counts.get(s, 0) < n:
                counts[s] = counts.get(s, 0) + 1
                ids.append(i)
    return counts, ids


def write_tasks(task: str, data_dir: Path, out: Path, limit: int,
                per_subject: int | None = None) -> tuple[list[str], int | None]:
    """Write the YAML(s) for ``task`` into ``out``.

    ``per_subject`` (MMLU only) keeps the first that many docs of every subject instead of the first
    ``limit`` docs of the file (which are the first subjects only).

    Returns:
        (lm-eval task names to pass to ``--tasks``, ``--limit`` to pass; None where the YAMLs
        already select the docs, as for MMLU whose first ``limit`` docs span several subjects).
    """
    out.mkdir(parents=True, exist_ok=True)
    utils = _UTILS
    if task == "mmlu":
        counts = (mmlu_per_subject(data_dir, per_subject)[0] if per_subject
                  else mmlu_subject_counts(data_dir, limit or 10**9))
        names = []
        for subject, keep in counts.items():
            utils += f"\n\nsubject_{subject} = _subject({subject!r}, {keep})\n"
            (out / f"mmlu_{subject}.yaml").write_text(_MMLU_YAML.format(
                subject=subject, spaced=subject.replace("_", " "), test=(data_dir / "mmlu/test.jsonl").resolve(),
                dev=(data_dir / "mmlu/dev.jsonl").resolve()))
            names.append(f"mmlu_{subject}")
        (out / "bench_utils.py").write_text(utils)
        return names, None
    rel, header, text, target, choice = SIMPLE[task]
    (out / f"{task}.yaml").write_text(_YAML.format(task=task, header=header, path=(data_dir / rel).resolve(),
                                                   text=text, target=target, choice=choice))
    (out / "bench_utils.py").write_text(utils)
    return [task], limit or None
