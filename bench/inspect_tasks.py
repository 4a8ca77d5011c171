"""An inspect_ai task for the inspect runs of ``bench/inspect_runs.py``: ARC-Easy validation as multiple choice.

Loaded by inspect itself (``inspect eval bench/inspect_tasks.py@arc_easy_mc``), never by repaudit. The solver
chain is inspect's standard one — ``system_message`` (optional) then ``multiple_choice()`` with its stock
template — and the scorer is ``choice()``. Each sample's input is two solved questions as earlier user/assistant
turns, then the question: SmolLM2-135M-Instruct with the stock template alone never writes the ``ANSWER: X``
line ``choice()`` needs (``../shared/NOTES.md``).

Task arguments (``-T name=value``, recorded by inspect as ``eval.task_args``):
    data: a JSON-lines file of ARC rows (``id``, ``question``, ``choices{text,label}``, ``answerKey``).
    system: a system message; empty = none.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice, system_message
from inspect_ai.solver._multiple_choice import SINGLE_ANSWER_TEMPLATE

#: two solved questions, shown as earlier turns in inspect's own single-answer format
SOLVED = [("Which of these is a source of light?", ["a mirror", "the Sun", "the Moon", "a window"], "B"),
          ("What do plants need to make food?", ["sunlight", "sand", "noise", "plastic"], "A")]


def _turns() -> list:
    out = []
    for question, choices, answer in SOLVED:
        letters = ",".join(chr(ord("A") + i) for i in range(len(choices)))
        listed = "\n".join(f"{chr(ord('A') + i)}) {c}" for i, c in enumerate(choices))
        out += [ChatMessageUser(content=SINGLE_ANSWER_TEMPLATE.format(question=question, choices=listed,
                                                                      letters=letters)),
                ChatMessageAssistant(content=f"ANSWER: {answer}")]
    return out


def record_to_sample(row: dict) -> Sample:
    labels = list(row["choices"]["label"])
    return Sample(id=row["id"], input=[*_turns(), ChatMessageUser(content=row["question"])],
                  choices=list(row["choices"]["text"]), target=chr(ord("A") + labels.index(row["answerKey"])))


@task
def arc_easy_mc(data: str, system: str = "") -> Task:
    solver = ([system_message(system)] if system else []) + [multiple_choice()]
    return Task(dataset=json_dataset(data, record_to_sample), solver=solver, scorer=choice())
