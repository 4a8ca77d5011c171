"""Python functions that lm-eval task configurations reference, reimplemented here and found by name.

A results file records a YAML ``!function utils.process_docs`` as ``<function process_docs at 0x…>`` or as
the function's Python source, ``def process_docs(dataset): …``, depending on the lm-eval version (0.4.7 and
0.4.13 record the source); only the name is used (a source is compared with the installed lm-eval's).
repaudit never runs code from a file; it looks the name up in
this registry, keyed by (field, function name) and the task family the function belongs to (the
task name's prefix), then — with the ``lmeval`` extra — in the installed lm-eval's own task folder
(:mod:`repaudit.tasks.lmeval_installed`). An unknown function is an error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from repaudit.errors import RepauditError

_FUNC = re.compile(r"<function (?:[\w.]*\.)?(\w+)(?: at 0x[0-9a-fA-F]+)?>")
_SOURCE = re.compile(r"\s*def (\w+)\s*\(")


def function_name(value: Any) -> str | None:
    """``"process_docs"`` for ``"<function process_docs at 0x7f…>"`` or ``"<function utils.process_docs>"``;
    ``None`` when ``value`` is not a recorded function."""
    if isinstance(value, str):
        m = _FUNC.fullmatch(value.strip()) or _SOURCE.match(value)
        if m:
            return m.group(1)
    return None


def _hellaswag_preprocess(text: str) -> str:
    # Brackets are artefacts of the WikiHow part of HellaSwag (lm_eval/tasks/hellaswag/utils.py).
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


def hellaswag_process_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's HellaSwag ``process_docs`` for one doc: ``query``, ``choices``, ``gold`` added."""
    ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
    return {**doc, "query": _hellaswag_preprocess(doc["activity_label"] + ": " + ctx),
            "choices": [_hellaswag_preprocess(e) for e in doc["endings"]], "gold": int(doc["label"])}


def winogrande_doc_to_text(doc: dict[str, Any]) -> int:
    """lm-eval's WinoGrande ``doc_to_text``: the gold option's index (partial evaluation)."""
    return {"1": 0, "2": 1}[doc["answer"]]


def winogrande_doc_to_choice(doc: dict[str, Any]) -> list[str]:
    """The sentence up to the blank, with each option filled in."""
    idx = doc["sentence"].index("_")
    return [doc["sentence"][:idx] + opt for opt in (doc["option1"], doc["option2"])]


def winogrande_doc_to_target(doc: dict[str, Any]) -> str:
    """The rest of the sentence after the blank (the shared continuation)."""
    idx = doc["sentence"].index("_") + 1
    return doc["sentence"][idx:].strip()


#: (field, function name) -> {task family: (implementation, per_doc)}; ``per_doc`` functions map one doc,
#: the others (``process_docs``) map a whole split in lm-eval but are applied doc by doc here
REGISTRY: dict[tuple[str, str], dict[str, Callable]] = {
    ("process_docs", "process_docs"): {"hellaswag": hellaswag_process_doc},
    ("doc_to_text", "doc_to_text"): {"winogrande": winogrande_doc_to_text},
    ("doc_to_choice", "doc_to_choice"): {"winogrande": winogrande_doc_to_choice},
    ("doc_to_target", "doc_to_target"): {"winogrande": winogrande_doc_to_target},
}


def known_functions() -> list[str]:
    """``family.field=name`` of every registered function, for error messages."""
    return sorted(f"{fam}: {field}={name}" for (field, name), fams in REGISTRY.items() for fam in fams)


def resolve(field: str, value: str, task: str) -> Callable:
    """The implementation of the recorded function ``value`` used as ``field`` of ``task``.

    Raises:
        RepauditError: a function repaudit does not know (named, with the ones it knows).
    """
    name = function_name(value) or value
    families = REGISTRY.get((field, name), {})
    for family in sorted(families, key=len, reverse=True):
        if task == family or task.startswith(family + "_") or task.startswith(family):
            return families[family]
    from repaudit.tasks.lmeval_installed import Mismatch, installed_function, installed_lmeval

    source = value if isinstance(value, str) and _SOURCE.match(value) else None
    try:
        found = installed_function(task, field, name, source)
    except Mismatch as exc:
        raise RepauditError(f"configs.{task}.{field}: {exc}") from None
    if found is not None:
        fn, origin = found
        return _split_level(fn, origin) if field == "process_docs" else _labelled(fn, origin)
    shown = value.strip().splitlines()[0][:60]
    have = installed_lmeval()
    why = (f"nor does the installed lm-eval {have[1]} define it for this task" if have else
           "and lm-eval is not installed (pip install 'repaudit[lmeval]' runs lm-eval's own function)")
    raise RepauditError(f"configs.{task}.{field} is the python function '{name}' ({shown}), which "
                        f"repaudit does not know for this task ({why}): it reimplements "
                        f"{'; '.join(known_functions())}")


def _labelled(fn: Callable, origin: str) -> Callable:
    def call(*args: Any) -> Any:
        return fn(*args)

    call.origin = origin  # type: ignore[attr-defined]
    return call


def _split_level(fn: Callable, origin: str) -> Callable:
    """lm-eval's ``process_docs`` maps a ``datasets.Dataset``: given the split's rows, it returns the processed
    rows (some functions filter or reorder docs, so it cannot run one doc at a time)."""

    def call(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        import datasets

        out = fn(datasets.Dataset.from_list(list(rows)))
        return out.to_list() if hasattr(out, "to_list") else list(out)

    call.origin = origin  # type: ignore[attr-defined]
    call.split_level = True  # type: ignore[attr-defined]
    return call
