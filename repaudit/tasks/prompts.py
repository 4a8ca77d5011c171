"""Render a doc into requests: prompt format, few-shot examples in order, chat template.

Formats:

* ``lmeval`` — the task's template in lm-evaluation-harness 0.4.13, byte for byte;
* ``lettered`` — "Question: …\\nA. …\\nB. …\\nAnswer:" scored on the letters " A", " B", …
  (the MCF format of OLMES, Gu et al. 2024, arXiv 2406.08446);
* ``cloze`` — the bare question (after any passage) scored on " <choice text>", the format
  of the GPT-3 paper (Brown et al. 2020).

The context is ``description + fewshot_delimiter.join(examples) + fewshot_delimiter + text``,
as in lm-eval's ``Task.fewshot_context``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.tasks.base import Doc, OutputType, Task
from repaudit.tasks.definitions import lettered
from repaudit.tasks.lmeval_config import ConfigTask
from repaudit.tasks.requests import GenerateRequest, GenerationSettings, LoglikelihoodRequest

FORMATS = ("lmeval", "lettered", "cloze")


@dataclass
class RenderedDoc:
    """A doc ready for the backend.

    Attributes:
        requests: one loglikelihood request per choice, or one generate_until request.
        choices: the scored choice texts (their character lengths normalise acc_norm).
        gold: index of the correct choice (``None`` for generation).
        target: the target text (choice text, or the reference answer for generation).
        prompt: the first request's context; its sha256 is the doc's ``prompt_hash``.
    """

    doc: Doc
    fewshot_ids: list[int]
    requests: list
    choices: list[str]
    gold: int | None
    target: str


def _lettered_text(task: Task, row) -> tuple[str, list[str], int]:
    mc = task.mc_view(row)
    body = "".join(f"{lettered(i)}. {c}\n" for i, c in enumerate(mc.choices))
    passage = f"{mc.passage}\n" if mc.passage else ""
    return f"{passage}Question: {mc.question}\n{body}Answer:", [lettered(i) for i in range(len(mc.choices))], mc.gold


def _cloze_text(task: Task, row) -> tuple[str, list[str], int]:
    mc = task.mc_view(row)
    passage = f"{mc.passage}\n" if mc.passage else ""
    return f"{passage}{mc.question}", list(mc.choices), mc.gold


def _lmeval_text(task: Task, row) -> tuple[str | int, list[str], int | str]:
    choices = task.doc_to_choice(row) if task.has_choices() else []
    return task.doc_to_text(row), choices, task.doc_to_target(row)


_RENDERERS = {"lmeval": _lmeval_text, "lettered": _lettered_text, "cloze": _cloze_text}


def check_format(task: Task, fmt: str) -> None:
    """Raises RepauditError when ``fmt`` is unknown or not supported by ``task``."""
    if fmt not in FORMATS:
        raise RepauditError(f"unknown prompt format '{fmt}': choose one of {', '.join(FORMATS)}")
    if fmt not in task.formats:
        raise RepauditError(f"task {task.name} does not support prompt format '{fmt}' "
                            f"(supported: {', '.join(task.formats)})")


def template_sha256(task: Task, fmt: str) -> str:
    """Hash of the code that renders ``task`` in ``fmt`` plus its delimiters.

    The template is code, not a string, so the hash covers the source of every function that
    shapes the prompt; editing any of them changes the hash. A task built from a recorded lm-eval
    configuration hashes that configuration's template part instead.
    """
    if isinstance(task, ConfigTask):
        return task.template_sha256()
    parts = [inspect.getsource(_RENDERERS[fmt])]
    methods = ["description", "process"]
    methods += ["doc_to_text", "doc_to_choice", "doc_to_target"] if fmt == "lmeval" else ["mc_view"]
    for m in methods:
        fn = getattr(type(task), m)
        try:
            parts.append(inspect.getsource(fn))
        except (OSError, TypeError):
            parts.append(m)
    parts += [repr(task.target_delimiter), repr(task.fewshot_delimiter)]
    return sha256_text("\n".join(parts))


def _answer(choices: list[str], target) -> str:
    """lm-eval's answer text of a few-shot example: the choice a target index names, the first of a
    list of targets, or the target itself."""
    if choices and isinstance(target, int) and not isinstance(target, bool):
        return str(choices[target])
    if isinstance(target, list):
        return str(target[0])
    return str(target)


def _example(task: Task, fmt: str, row) -> str:
    text, choices, target = _RENDERERS[fmt](task, row)
    if isinstance(text, int):  # multiple inputs (winogrande): the context is the gold choice
        return choices[text] + task.target_delimiter + str(target)
    if fmt != "lmeval" and task.output_type is OutputType.multiple_choice:
        return text + task.target_delimiter + choices[target]
    return text + task.target_delimiter + _answer(choices, target)


def render(task: Task, doc: Doc, fewshot: list[Doc], fmt: str, generation: GenerationSettings | None,
           chat: Callable[[str], str] | None) -> RenderedDoc:
    """Build the requests for ``doc`` with ``fewshot`` examples in the given order.

    ``chat``, when given, wraps a finished context in the model's chat template (as a user turn,
    with the generation prompt added); continuations are scored after it unchanged.
    """
    text, choices, gold = _RENDERERS[fmt](task, doc.row)
    prefix = task.description(doc)
    if fewshot:
        prefix += task.fewshot_delimiter.join(_example(task, fmt, d.row) for d in fewshot) + task.fewshot_delimiter
    wrap = chat or (lambda s: s)
    ids = [d.doc_id for d in fewshot]
    if task.output_type is OutputType.generate_until:
        assert generation is not None
        req = GenerateRequest(context=wrap(prefix + text), settings=generation)
        return RenderedDoc(doc, ids, [req], [], None, _answer(choices, gold))
    if task.output_type is OutputType.loglikelihood:  # lm-eval: (context, target), no delimiter added
        target = _answer([], gold)
        return RenderedDoc(doc, ids, [LoglikelihoodRequest(wrap(prefix + text), target)], [target], 0, target)
    if isinstance(text, int):  # partial scoring: one context per choice, one shared continuation
        cont = task.target_delimiter + str(gold)
        reqs = [LoglikelihoodRequest(wrap(prefix + c), cont) for c in choices]
        return RenderedDoc(doc, ids, reqs, list(choices), text, choices[text])
    context = wrap(prefix + text)
    gold_i = gold if fmt != "lmeval" else task.gold_index(doc.row, choices)
    reqs = [LoglikelihoodRequest(context, task.target_delimiter + str(c)) for c in choices]
    return RenderedDoc(doc, ids, reqs, [str(c) for c in choices], int(gold_i), str(choices[int(gold_i)]))
