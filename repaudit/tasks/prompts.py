"""Render a doc into requests: prompt format, few-shot examples in order, chat template.

Formats:

* ``lmeval`` — the task's template in lm-evaluation-harness 0.4.13, byte for byte;
* ``lettered`` — "Question: …\\nA. …\\nB. …\\nAnswer:" scored on the letters " A", " B", …
  (the MCF format of OLMES, Gu et al. 2024, arXiv 2406.08446); the label style (``A.``, ``(A)``,
  ``A)``, ``A:``, or ``none``: choices listed bare and scored on their text) and the separator
  between question and choices are :class:`PromptOptions`;
* ``cloze`` — the bare question (after any passage) scored on " <choice text>", the format
  of the GPT-3 paper (Brown et al. 2020).

The context is ``description + fewshot_delimiter.join(examples) + fewshot_delimiter + text``,
as in lm-eval's ``Task.fewshot_context``. With a chat template it follows lm-eval 0.4.13's
``fewshot_context``: the description (after any system prompt) is the system message, and the
examples either stay in the user turn or, with ``fewshot_as_multiturn``, become one user/assistant
turn pair each.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import get_args

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.settings import LabelStyle, PromptFormat
from repaudit.tasks.base import Doc, OutputType, Task
from repaudit.tasks.definitions import lettered
from repaudit.tasks.lmeval_config import ConfigTask
from repaudit.tasks.requests import GenerateRequest, GenerationSettings, LoglikelihoodRequest

FORMATS: tuple[str, ...] = get_args(PromptFormat)
#: ``--label-style`` of lettered prompts; ``none`` lists the choices without labels
LABEL_STYLES: tuple[str, ...] = get_args(LabelStyle)

#: ``chat(description, [(user, assistant) example turns], user) -> prompt``: the backend's chat template
Chat = Callable[[str, list[tuple[str, str]], str], str]


@dataclass(frozen=True)
class PromptOptions:
    """Rendering choices beyond the format; each is a factor of the fingerprint.

    Attributes:
        label_style: lettered prompts: how choices are labelled (:data:`LABEL_STYLES`); the answer
            scored is the letter (``(A)`` for the ``(A)`` style), or the choice text for ``none``.
        choice_separator: lettered prompts: text between the question and the first choice.
        description: text before the examples; ``None`` = the task's own (lm-eval's ``description``).
        fewshot_as_multiturn: with a chat template, each example is a user/assistant turn pair.
        pmi: add one unconditional request per choice (empty context, lm-eval's ``acc_mutual_info``).
    """

    label_style: str = "A."
    choice_separator: str = "\n"
    description: str | None = None
    fewshot_as_multiturn: bool = False
    pmi: bool = False


@dataclass
class RenderedDoc:
    """A doc ready for the backend.

    Attributes:
        requests: one loglikelihood request per choice, or one generate_until request.
        choices: the scored choice texts (their character lengths normalise acc_norm).
        gold: index of the correct choice (``None`` for generation).
        target: the target text (choice text, or the reference answer for generation).
        unconditional: with ``pmi``, one request per choice scoring it after an empty context.
    """

    doc: Doc
    fewshot_ids: list[int]
    requests: list
    choices: list[str]
    gold: int | None
    target: str
    unconditional: list = field(default_factory=list)

    @property
    def all_requests(self) -> list:
        """Every request the backend answers for this doc, in answer order: ``requests`` then ``unconditional``."""
        return [*self.requests, *self.unconditional]


def _label(style: str, i: int) -> tuple[str, str]:
    """(label as listed, answer scored) of choice ``i`` in ``style``: ``B.``/``B``, ``(B)``/``(B)``."""
    letter = lettered(i)
    if style == "(A)":
        return f"({letter})", f"({letter})"
    return style.replace("A", letter), letter


def _lettered_text(task: Task, row, opts: PromptOptions = PromptOptions()) -> tuple[str, list[str], int]:
    mc = task.mc_view(row)
    if opts.label_style == "none":
        body, answers = "".join(f"{c}\n" for c in mc.choices), list(mc.choices)
    else:
        labels = [_label(opts.label_style, i) for i in range(len(mc.choices))]
        body = "".join(f"{shown} {c}\n" for (shown, _), c in zip(labels, mc.choices))
        answers = [a for _, a in labels]
    passage = f"{mc.passage}\n" if mc.passage else ""
    return f"{passage}Question: {mc.question}{opts.choice_separator}{body}Answer:", answers, mc.gold


def _cloze_text(task: Task, row) -> tuple[str, list[str], int]:
    mc = task.mc_view(row)
    passage = f"{mc.passage}\n" if mc.passage else ""
    return f"{passage}{mc.question}", list(mc.choices), mc.gold


def _lmeval_text(task: Task, row) -> tuple[str | int, list[str], int | str]:
    choices = task.doc_to_choice(row) if task.has_choices() else []
    return task.doc_to_text(row), choices, task.doc_to_target(row)


_RENDERERS = {"lmeval": _lmeval_text, "lettered": _lettered_text, "cloze": _cloze_text}


def _text(task: Task, fmt: str, row, opts: PromptOptions) -> tuple:
    return _lettered_text(task, row, opts) if fmt == "lettered" else _RENDERERS[fmt](task, row)


def check_format(task: Task, fmt: str, opts: PromptOptions = PromptOptions()) -> None:
    """Raises RepauditError when ``fmt`` is unknown or not supported by ``task``, or ``opts`` do not
    apply to it (a label style or choice separator other than the default outside ``lettered``)."""
    if fmt not in FORMATS:
        raise RepauditError(f"unknown prompt format '{fmt}': choose one of {', '.join(FORMATS)}")
    if fmt not in task.formats:
        raise RepauditError(f"task {task.name} does not support prompt format '{fmt}' "
                            f"(supported: {', '.join(task.formats)})")
    if opts.label_style not in LABEL_STYLES:
        raise RepauditError(f"unknown label style '{opts.label_style}': choose one of {', '.join(LABEL_STYLES)}")
    if fmt != "lettered" and (opts.label_style, opts.choice_separator) != ("A.", "\n"):
        raise RepauditError("--label-style and --choice-separator apply to --prompt-format lettered only "
                            f"(this run uses '{fmt}')")


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


def _example(task: Task, fmt: str, row, opts: PromptOptions) -> tuple[str, str]:
    """(question, answer) of one few-shot example; in a prompt they are joined by the target delimiter."""
    text, choices, target = _text(task, fmt, row, opts)
    if isinstance(text, int):  # multiple inputs (winogrande): the context is the gold choice
        return choices[text], str(target)
    if fmt != "lmeval" and task.output_type is OutputType.multiple_choice:
        return text, choices[target]
    return text, _answer(choices, target)


def render(task: Task, doc: Doc, fewshot: list[Doc], fmt: str, generation: GenerationSettings | None,
           chat: Chat | None, opts: PromptOptions = PromptOptions()) -> RenderedDoc:
    """Build the requests for ``doc`` with ``fewshot`` examples in the given order.

    ``chat``, when given, renders the prompt through the model's chat template (generation prompt
    added): description as system message, examples in the user turn or, with
    ``opts.fewshot_as_multiturn``, as turn pairs; continuations are scored after it unchanged.
    """
    text, choices, gold = _text(task, fmt, doc.row, opts)
    description = task.description(doc) if opts.description is None else opts.description
    examples = [_example(task, fmt, d.row, opts) for d in fewshot]
    shots = "".join(q + task.target_delimiter + a + task.fewshot_delimiter for q, a in examples)

    def wrap(user: str) -> str:
        if chat is None:
            return description + shots + user
        if opts.fewshot_as_multiturn:
            return chat(description, examples, user)
        return chat(description, [], shots + user)

    ids = [d.doc_id for d in fewshot]
    if task.output_type is OutputType.generate_until:
        assert generation is not None
        req = GenerateRequest(context=wrap(text), settings=generation)
        return RenderedDoc(doc, ids, [req], [], None, _answer(choices, gold))
    if task.output_type is OutputType.loglikelihood:  # lm-eval: (context, target), no delimiter added
        target = _answer([], gold)
        return RenderedDoc(doc, ids, [LoglikelihoodRequest(wrap(text), target)], [target], 0, target)
    if isinstance(text, int):  # partial scoring: one context per choice, one shared continuation
        if opts.pmi:
            raise RepauditError(f"task {task.name} scores one shared continuation after each choice: "
                                "acc_norm pmi (an unconditional likelihood per choice) does not apply")
        cont = task.target_delimiter + str(gold)
        reqs = [LoglikelihoodRequest(wrap(c), cont) for c in choices]
        return RenderedDoc(doc, ids, reqs, list(choices), text, choices[text])
    context = wrap(text)
    gold_i = gold if fmt != "lmeval" else task.gold_index(doc.row, choices)
    conts = [task.target_delimiter + str(c) for c in choices]
    reqs = [LoglikelihoodRequest(context, c) for c in conts]
    uncond = [LoglikelihoodRequest("", c) for c in conts] if opts.pmi else []
    return RenderedDoc(doc, ids, reqs, [str(c) for c in choices], int(gold_i), str(choices[int(gold_i)]), uncond)
