"""Tasks built from a recorded lm-eval configuration: ``configs.<task>`` of a results file, or a task YAML.

The views follow lm-evaluation-harness 0.4.13's ``ConfigurableTask``:

* ``doc_to_text`` / ``doc_to_target`` / ``doc_to_choice``: an int is used as is; a string that names a
  column of the doc returns that column; any other string is a Jinja template rendered with the doc
  (for text and target, an all-digit result becomes an int when the task has choices, and a target
  that looks like a list is read as one); ``doc_to_choice`` templates are read as Python literals,
  a list is used as is and a dict gives its values; a recorded ``<function …>`` is looked up in
  :mod:`repaudit.tasks.functions`.
* ``description`` is a template too, rendered with the doc; ``target_delimiter`` (" ") and
  ``fewshot_delimiter`` ("\\n\\n") are lm-eval's defaults when not recorded.
* Templates render in lm-eval's Jinja set-up (undefined names are errors, trailing newlines kept, the
  ``regex_replace`` filter) but in a **sandbox**: a results file is untrusted, and a template must not
  reach Python internals.

Output types: ``multiple_choice``, ``loglikelihood`` (one continuation, ``acc`` = is_greedy) and
``generate_until``. Metrics: ``acc``, ``acc_norm`` and ``exact_match`` with its options; filters as in
:mod:`repaudit.tasks.filters`. Anything else fails with one line naming it.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.tasks.base import Doc, OutputType, Task
from repaudit.tasks.filters import NO_FILTER, ExactMatchOptions, pipeline_from_spec
from repaudit.tasks.functions import function_name, resolve

#: output types repaudit replays (lm-eval 0.3's ``greedy_until`` is ``generate_until``)
OUTPUT_TYPES = {"multiple_choice": OutputType.multiple_choice, "generate_until": OutputType.generate_until,
                "greedy_until": OutputType.generate_until, "loglikelihood": OutputType.loglikelihood}
METRICS = {OutputType.multiple_choice: ("acc", "acc_norm", "acc_bytes", "exact_match"),
           OutputType.generate_until: ("exact_match",),
           OutputType.loglikelihood: ("acc",)}
#: configuration keys that are not part of the prompt template: n-shot, run metadata, bookkeeping
NOT_TEMPLATE = ("num_fewshot", "metadata", "tag", "group", "task_alias", "group_alias", "should_decontaminate",
                "doc_to_decontamination_query", "unsafe_code", "repeats", "generation_kwargs")


def _regex_replace(text: str, pattern: str, repl: str, count: int = 0) -> str:
    return re.sub(pattern, repl, text, count=count)


_ENV = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
_ENV.filters["regex_replace"] = _regex_replace


@lru_cache(maxsize=512)
def _compiled(template: str):
    return _ENV.from_string(template)


def render_template(template: str, doc: dict[str, Any], where: str) -> str:
    """Render one lm-eval Jinja template with ``doc``'s fields.

    Raises:
        RepauditError: a syntax error, an undefined name, or an operation the sandbox refuses.
    """
    try:
        return _compiled(template).render(**doc)
    except jinja2.TemplateSyntaxError as exc:
        raise RepauditError(f"{where}: the Jinja template does not parse ({exc.message}, line {exc.lineno})") from None
    except jinja2.exceptions.SecurityError as exc:
        raise RepauditError(f"{where}: the Jinja template does something unsafe ({exc}); refused") from None
    except (jinja2.UndefinedError, TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise RepauditError(f"{where}: the Jinja template fails on this doc ({type(exc).__name__}: "
                            f"{str(exc)[:120]})") from None


@lru_cache(maxsize=64)
def _resolved(field_name: str, value: str, task: str):
    # once per task, not per doc: resolving reads the installed lm-eval's YAML include chain
    return resolve(field_name, value, task)


@dataclass
class ConfigTask(Task):
    """A task defined by a recorded lm-eval configuration (see the module docstring).

    Attributes:
        config: the configuration as recorded (function addresses dropped).
        output_name: the recorded output type (``loglikelihood_rolling`` is kept so it can be named).
        unsupported: metrics the configuration asks for that repaudit does not compute.
        fixed_samples: few-shot docs listed in ``fewshot_config.samples``.
    """

    config: dict[str, Any] = field(default_factory=dict)
    output_name: str = ""
    unsupported: tuple[str, ...] = ()
    fixed_samples: list[dict[str, Any]] | None = None

    def check_runnable(self) -> None:
        """Raises RepauditError for an output type or metric this task asks for that repaudit cannot compute."""
        if self.output_name not in OUTPUT_TYPES:
            raise RepauditError(f"configs.{self.name}.output_type '{self.output_name}' is not replayable "
                                f"(repaudit replays {', '.join(OUTPUT_TYPES)})")
        if self.unsupported and not self.metrics:
            raise RepauditError(f"configs.{self.name}.metric_list names {', '.join(self.unsupported)}, which "
                                f"repaudit does not compute for {self.output_name} (it computes "
                                f"{', '.join(METRICS[self.output_type])})")

    def results_function(self):
        """The recorded ``process_results`` resolved to lm-eval's own function (``lmeval`` extra), or ``None``.

        lm-eval calls it as ``process_results(doc, results)`` with the processed doc and, per doc,
        ``[(loglikelihood, is_greedy)]`` per choice (multiple_choice, loglikelihood) or ``[answer]``
        per filter (generate_until); it returns ``{metric: value}`` and replaces every built-in metric.

        Raises:
            RepauditError: a function repaudit cannot resolve (named; without lm-eval, the extra).
        """
        fn = self.config.get("process_results")
        return _resolved("process_results", fn, self.name) if isinstance(fn, str) and fn else None

    # --- identity ---
    def template_identity(self) -> dict[str, Any]:
        """The configuration minus what is not prompt template (n-shot, metadata, generation settings)."""
        return {k: v for k, v in self.config.items() if k not in NOT_TEMPLATE}

    def template_sha256(self) -> str:
        return sha256_json(self.template_identity())

    # --- data ---
    def check_row(self, row):
        return None  # a recorded configuration carries no schema; its templates fail on a bad row

    def process(self, row):
        fn = self.config.get("process_docs")
        return resolve("process_docs", fn, self.name)(row) if fn else row

    def process_rows(self, rows):
        """The split's rows after ``process_docs``: lm-eval's own function (with the ``lmeval`` extra) maps the
        whole split; a reimplemented one maps doc by doc."""
        fn = self.config.get("process_docs")
        if not fn:
            return list(rows)
        impl = resolve("process_docs", fn, self.name)
        return impl(rows) if getattr(impl, "split_level", False) else [impl(r) for r in rows]

    # --- the harness view ---
    def _where(self, key: str) -> str:
        return f"task {self.name}: {key}"

    def _field(self, key: str, row: dict[str, Any]) -> Any:
        value = self.config.get(key)
        if isinstance(value, str) and function_name(value):
            return resolve(key, value, self.name)(row)
        return value

    def description(self, doc: Doc) -> str:
        desc = self.config.get("description") or ""
        return render_template(desc, doc.row, self._where("description")) if desc else ""

    def doc_to_text(self, row):
        value = self._field("doc_to_text", row)
        if isinstance(value, (int, list)) or value is None:
            return value if value is not None else ""
        if value in row:
            return row[value]
        text = render_template(value, row, self._where("doc_to_text"))
        if text.isdigit() and self.config.get("doc_to_choice") is not None:
            return ast.literal_eval(text)
        return text

    def doc_to_target(self, row):
        value = self._field("doc_to_target", row)
        if not isinstance(value, str) or value == "":
            return value
        if value in row:
            return row[value]
        text = render_template(value, row, self._where("doc_to_target"))
        if text.isdigit() and self.config.get("doc_to_choice") is not None:
            return ast.literal_eval(text)
        if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return text
        return text

    def doc_to_choice(self, row):
        value = self._field("doc_to_choice", row)
        if value is None:
            raise RepauditError(f"{self._where('doc_to_choice')}: a multiple_choice task records no doc_to_choice")
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return list(value.values())
        if value in row:
            return row[value]
        text = render_template(value, row, self._where("doc_to_choice"))
        try:
            choices = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise RepauditError(f"{self._where('doc_to_choice')}: the template gives {text[:60]!r}, "
                                "not a list") from None
        if not isinstance(choices, (list, tuple)):
            raise RepauditError(f"{self._where('doc_to_choice')}: the template gives {type(choices).__name__}, "
                                "not a list")
        return list(choices)

    def has_choices(self) -> bool:
        return self.config.get("doc_to_choice") is not None

    def gold_index(self, row, choices: list[str]) -> int:
        """lm-eval's gold for multiple choice: an int target, or a string target's index among the choices.

        Raises:
            RepauditError: a target that is neither (a list of golds is not supported).
        """
        target = self.doc_to_target(row)
        if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(choices):
            return target
        if isinstance(target, str) and target in choices:
            return choices.index(target)
        raise RepauditError(f"{self._where('doc_to_target')}: gold {target!r} is not a choice index or one of the "
                            f"{len(choices)} choices")


def _options(metric_list: list[dict[str, Any]]) -> ExactMatchOptions:
    for m in metric_list:
        if m.get("metric") == "exact_match":
            return ExactMatchOptions(ignore_case=bool(m.get("ignore_case", False)),
                                     ignore_punctuation=bool(m.get("ignore_punctuation", False)),
                                     ignore_numbers=bool(m.get("ignore_numbers", False)),
                                     regexes_to_ignore=tuple(m.get("regexes_to_ignore") or ()))
    return ExactMatchOptions()


def task_from_config(name: str, cfg: dict[str, Any], version: float = 1.0) -> ConfigTask:
    """A :class:`ConfigTask` from one recorded configuration (a plain dict, as in the results file).

    Raises:
        RepauditError: an output type, metric, sampler or filter repaudit does not implement, an
            unknown ``!function``, or a missing evaluation split — each named in one line.
    """
    cfg = copy.deepcopy(cfg)
    where = f"configs.{name}"
    output_name = str(cfg.get("output_type") or "generate_until")
    out = OUTPUT_TYPES.get(output_name, OutputType.generate_until)
    requested = [str(m.get("metric")) for m in cfg.get("metric_list") or [] if isinstance(m, dict)]
    supported = METRICS[out]
    if cfg.get("process_results"):
        # lm-eval's process_results computes every metric of the list; repaudit records one number per doc, so
        # it keeps those lm-eval averages over docs (IFEval's instruction-level lists are aggregated otherwise)
        resolve("process_results", cfg["process_results"], name)
        supported = tuple(str(m.get("metric")) for m in cfg.get("metric_list") or []
                          if isinstance(m, dict) and m.get("aggregation") in (None, "mean"))
        if not requested:
            raise RepauditError(f"{where}.process_results is set but metric_list is empty: no metric to record")
    metrics = [m for m in requested if m in supported] if requested else list(supported[:1])
    unsupported = tuple(m for m in requested if m not in supported)
    for key in ("process_docs", "doc_to_text", "doc_to_target", "doc_to_choice"):
        if function_name(cfg.get(key)):
            resolve(key, cfg[key], name)  # unknown functions fail now, not at the first doc
    fs = cfg.get("fewshot_config") or {}
    sampler = {"default": "random", None: "random", "first_n": "first_n"}.get(fs.get("sampler"))
    if sampler is None:
        raise RepauditError(f"{where}.fewshot_config.sampler '{fs.get('sampler')}' is not one repaudit implements "
                            "(default, first_n)")
    samples = fs.get("samples")
    # lm-eval's own list of examples (with the lmeval extra); else fails naming it
    if isinstance(samples, str) and function_name(samples):
        samples = resolve("fewshot_config.samples", samples, name)()
    if samples is not None and not (isinstance(samples, list) and all(isinstance(s, dict) for s in samples)):
        raise RepauditError(f"{where}.fewshot_config.samples is {str(samples)[:60]!r}: only a recorded list of docs "
                            "can be replayed")
    eval_split = cfg.get("test_split") or cfg.get("validation_split")
    # lm-eval 0.4.13 keeps a doc out of its own examples only when fewshot_split == test_split (both may be unset)
    exclude_self = cfg.get("fewshot_split") == cfg.get("test_split")
    if not eval_split:
        raise RepauditError(f"{where} records neither test_split nor validation_split")
    pipelines = tuple(pipeline_from_spec(f, f"{where}.filter_list[{i}]")
                      for i, f in enumerate(cfg.get("filter_list") or [])) or (NO_FILTER,)
    gen = cfg.get("generation_kwargs") or {}
    until = gen.get("until")
    until = (until,) if isinstance(until, str) else tuple(until or ())
    return ConfigTask(
        name=name, output_type=out, hub_path=str(cfg.get("dataset_path") or ""),
        hub_name=cfg.get("dataset_name"), eval_split=eval_split,
        fewshot_split=cfg.get("fewshot_split") or cfg.get("training_split") or (
            cfg.get("validation_split") if cfg.get("test_split") else None),
        local_files={}, required_fields=(), fewshot_sampler="first_n" if samples else sampler,
        default_num_fewshot=int(cfg.get("num_fewshot") or 0), metrics=tuple(metrics), formats=("lmeval",),
        version=version, target_delimiter=cfg.get("target_delimiter", " "),
        fewshot_delimiter=cfg.get("fewshot_delimiter", "\n\n"), until=until,
        max_gen_toks=int(gen.get("max_gen_toks") or 256), config=cfg, filter_pipelines=pipelines,
        em_options=_options(cfg.get("metric_list") or []), fixed_samples=samples, output_name=output_name,
        unsupported=unsupported, fewshot_exclude_self=exclude_self)
