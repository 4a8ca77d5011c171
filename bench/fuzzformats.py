"""Seeded mutations of the formats people publish — HELM run folders and Every Eval Ever 0.1.x/0.2.x records — for
the fuzz test (``tests/test_fuzz.py``) and bench (``bench/fuzz.py``).

A HELM case is a pair of run folders: A a copy of a real one, B the same with one of its files mutated by a category
of ``fuzzgen.CATEGORIES`` (truncation, flipped bytes, non-UTF-8, wrong types, deleted and extra keys, non-finite and
huge numbers, deep nesting, a duplicated or garbled instance, an injected string), or a file removed
(``missing_file``). Every Eval Ever 0.1/0.2 records are single files, mutated by ``fuzzgen.Generator`` itself
(:func:`eee_bases`). The judge is ``fuzzgen.run_case``: one ``error:`` line or a sane report, no traceback, no
partial output file, injected strings shown literally.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from fuzzgen import INJECTIONS, Case, _byte_mutation, _dump, _mutate_json

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "realworld" / "cases"
#: HELM run folders of the real-world corpus that cases are derived from (small ones: a case copies the folder)
HELM_BASES = [CASES / "helm_simple_safety_v3_claude35_vs_gpt4o" / "simple_safety_tests:model=openai_gpt-4o-2024-05-13",
              CASES / "helm_vs_eee010_hellaswag_pythia1b" /
              "commonsense-dataset=hellaswag,method=multiple_choice_joint,model=eleutherai_pythia-1b-v0"]
#: the files of a run folder a case mutates, each as likely
HELM_FILES = ["run_spec.json", "stats.json", "per_instance_stats.json", "scenario_state.json"]
#: HELM's categories: fuzzgen's, and a file of the folder removed
HELM_CATEGORIES = ["truncate", "byte_flip", "non_utf8", "wrong_type", "delete_key", "extra_key", "non_finite",
                   "huge_int", "deep_nesting", "duplicate_doc", "garbled_line", "injection", "missing_file"]


def eee_bases() -> list[tuple[str, Path, None]]:
    """Every Eval Ever 0.1.x and 0.2.x records of the corpus, as ``fuzzgen.Generator`` bases."""
    names = ["eee010_helm_instruct_claude_vs_gpt35", "eee020_hfopenllm_yi34b_32k_vs_chat16k",
             "eee022_hal_corebench_opus41_default_vs_high", "eee020_ai2arc_inspect_qwen_vs_sonnet"]
    out = [("eee", next((CASES / n / "a").glob("*.json")), None) for n in names]
    out.append(("eee", next((CASES / "helm_vs_eee010_hellaswag_pythia1b" / "eee").glob("*.json")), None))
    return out


class HelmGenerator:
    """Writes HELM fuzz cases under ``workdir`` (one folder per case) from :data:`HELM_BASES`; the same ``seed``
    gives the same cases."""

    def __init__(self, workdir: Path, seed: int = 0, bases: list[Path] | None = None):
        self.workdir, self.rng = workdir, random.Random(seed)
        self.bases = bases or HELM_BASES

    def case(self, i: int, category: str) -> Case:
        """Case ``i`` of ``category`` (:data:`HELM_CATEGORIES`): two run folders, B's mutated."""
        rng = self.rng
        base = rng.choice(self.bases)
        folder = self.workdir / f"helm{i:05d}"
        a, b = folder / "a" / base.name, folder / "b" / base.name
        shutil.copytree(base, a)
        shutil.copytree(base, b)
        name = rng.choice(HELM_FILES)
        target = b / name
        injected, displayed = None, False
        if category == "missing_file":
            target.unlink()
        elif category in ("truncate", "byte_flip", "non_utf8"):
            target.write_bytes(_byte_mutation(target.read_bytes(), rng, category))
        elif category in ("duplicate_doc", "garbled_line"):
            rows = json.loads((b / "per_instance_stats.json").read_text())
            j = rng.randrange(len(rows))
            if category == "duplicate_doc":
                rows.insert(rng.randrange(len(rows) + 1), rows[j])
            else:
                rows[j] = rng.choice(["garbage", 17, None, {"instance_id": None}, {"stats": "x"}, [1, 2]])
            (b / "per_instance_stats.json").write_text(_dump(rows))
        elif category == "injection" and rng.random() < 0.5:
            injected, displayed = rng.choice(INJECTIONS), True
            for side in (a, b):  # both sides: the injected task name is in every report
                spec = json.loads((side / "run_spec.json").read_text())
                spec["name"] = injected + spec["name"]
                (side / "run_spec.json").write_text(_dump(spec), encoding="utf-8", errors="surrogatepass")
        else:
            mutated, injected = _mutate_json(json.loads(target.read_text()), rng, category)
            target.write_text(_dump(mutated), encoding="utf-8", errors="surrogatepass")
        return Case(category, a, b, injected, displayed)

