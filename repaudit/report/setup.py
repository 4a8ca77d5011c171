"""The evaluation setup of a paper appendix: one row per setting any run records, one cell per run, each cell's text
with where it came from. :func:`setup_rows` is the one place that knows where the values come from — today a
repaudit run's fingerprint (as the factor registry reads it) and another harness's factor groups
(:attr:`repaudit.importers.comparable.ComparableRun.factors`); its callers see rows of cells only.

A value the file does not record is ``not recorded`` (never guessed); a setting the harness's command line left to
its default is ``not set`` with the harness named in its note; a value that holds for some of a run's tasks but not
others lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from repaudit.importers.comparable import ComparableRun
from repaudit.importers.factors import NOT_SET, UNKNOWN

Provenance = Literal["recorded", "harness default", "derived", "not recorded"]


@dataclass(frozen=True)
class SetupCell:
    """One run's value of one setting.

    Attributes:
        text: the value as one line of plain text (the renderer escapes it); ``not recorded`` or ``not set`` where
            the file says nothing or the harness's default applied.
        provenance: recorded (the file says so), harness default (the harness chose it; ``note`` names the harness),
            derived (computed from what the file records; ``note`` says how) or not recorded.
        note: what a footnote says about the value; empty: nothing.
    """

    text: str
    provenance: Provenance = "recorded"
    note: str = ""


@dataclass
class SetupRow:
    """One setting: its label and one cell per run, in the runs' order."""

    setting: str
    cells: list[SetupCell] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """Every run has the same text (a merged cell)."""
        return len({c.text for c in self.cells}) == 1


_HEX = re.compile(r"^[0-9a-f]{40,64}$")


def _text(value: Any) -> str:
    """A factor value as one line: hashes cut to 12 characters, lists and dicts joined, booleans as yes/no."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else str(value)
    if isinstance(value, str):
        return value[:12] + "…" if _HEX.match(value) else value.replace("\n", "\\n")
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value) or "none"
    return str(value)


def _cell(value: Any, harness: str) -> SetupCell:
    if value is _ABSENT or value == UNKNOWN:
        return SetupCell("not recorded", "not recorded")
    if value == NOT_SET:
        return SetupCell("not set", "harness default",
                         f"not set in the file: {harness} applied its own default, which the file does not record")
    return SetupCell(_text(value))


_ABSENT = object()


def _get(group: str, name: str) -> Callable[[dict, ComparableRun], Any]:
    return lambda f, _run: f.get(group, {}).get(name, _ABSENT)


def _decoding(f: dict, _run: ComparableRun) -> Any:
    s = f.get("sampling", {})
    sample = s.get("do_sample", _ABSENT)
    if sample is None:
        return "none: log-likelihood scoring" if f.get("max_tokens", {}).get("max_gen_toks") is None else "greedy"
    if sample is _ABSENT or sample in (UNKNOWN, NOT_SET):
        return sample
    if not sample:
        return "greedy"
    return "sampling: " + ", ".join(f"{k} {_text(v)}" for k, v in s.items() if k != "do_sample")


def _prompt(f: dict, _run: ComparableRun) -> Any:
    p = f.get("prompt_format", {})
    for key in ("format", "prompt_function", "doc_to_text", "prompt_version"):
        if key in p:
            return p[key]
    return _ABSENT


def _task_hash(f: dict, _run: ComparableRun) -> Any:
    d = f.get("data", {})
    content = d.get("content_sha256", _ABSENT)
    return d.get("task_hash", content) if content in (_ABSENT, UNKNOWN) else content


def _seeds(f: dict, _run: ComparableRun) -> Any:
    s = f.get("seed", {})
    got = {k: s[k] for k in ("python", "numpy", "torch") if k in s}
    if not got or all(v == UNKNOWN for v in got.values()):
        return UNKNOWN if got else _ABSENT
    return {k: ("not recorded" if v == UNKNOWN else v) for k, v in got.items()}


def _versions(f: dict, _run: ComparableRun) -> Any:
    v = f.get("library_versions", {})
    keep = [k for k in ("lm_eval", "lighteval", "inspect_ai", "repaudit", "vllm", "transformers", "torch", "python")
            if k in v]
    return {k: v[k] for k in keep} if keep else _ABSENT


#: (setting, reader of one task's factor groups) in the order a reader looks for them
ROWS: list[tuple[str, Callable[[dict, ComparableRun], Any]]] = [
    ("model", _get("model", "name")), ("model revision", _get("model", "revision")),
    ("model commit (sha)", _get("model", "sha")), ("weights sha256", _get("model", "weights_sha256")),
    ("harness", lambda _f, run: run.source), ("task", _get("data", "task")),
    ("task version", _get("data", "task_version")), ("task data hash", _task_hash), ("split", _get("data", "split")),
    ("docs evaluated", _get("data", "n_docs")), ("doc limit", _get("data", "limit")),
    ("n-shot", _get("fewshot", "num_fewshot")), ("few-shot selection", _get("fewshot", "sampler")),
    ("few-shot split", _get("fewshot", "split")), ("few-shot seed", _get("seed", "fewshot")),
    ("prompt format", _prompt), ("chat template applied", _get("chat_template", "applied")),
    ("system prompt", _get("chat_template", "system_prompt")), ("decoding", _decoding),
    ("max new tokens", _get("max_tokens", "max_gen_toks")), ("stop sequences", _get("stop", "until")),
    ("dtype", _get("dtype", "dtype")), ("quantisation", _get("quantisation", "method")),
    ("batch size", _get("batch_size", "batch_size")), ("backend", _get("backend", "name")),
    ("scoring strategy", _get("backend", "scoring_strategy")), ("device", _get("backend", "device")),
    ("GPUs", _get("hardware", "gpus")), ("CPU", _get("hardware", "cpu_model")),
    ("library versions", _versions), ("seeds (python, numpy, torch)", _seeds),
]


def _run_cell(run: ComparableRun, read: Callable[[dict, ComparableRun], Any]) -> SetupCell:
    """One run's cell: the value every task agrees on, else each task's (``task: value``)."""
    harness = run.source
    cells = {task: _cell(read(f, run), harness) for task, f in run.factors.items()}
    if not cells:
        return SetupCell("not recorded", "not recorded")
    texts = list(dict.fromkeys(c.text for c in cells.values()))
    if len(texts) == 1:
        return next(iter(cells.values()))
    by_task = "; ".join(f"{t}: {c.text}" for t, c in list(cells.items())[:4])
    more = f"; … ({len(cells)} tasks)" if len(cells) > 4 else ""
    notes = [c.note for c in cells.values() if c.note]
    return SetupCell(by_task + more, "recorded", notes[0] if notes else "")


def setup_rows(runs: list[ComparableRun]) -> list[SetupRow]:
    """The setup table of ``runs`` (one cell per run, in order): every setting of :data:`ROWS` that at least one
    run records, each cell with its provenance (see :class:`SetupCell`). Reads nothing but the runs."""
    out = []
    for setting, read in ROWS:
        row = SetupRow(setting, [_run_cell(run, read) for run in runs])
        if any(c.provenance != "not recorded" for c in row.cells):
            out.append(row)
    return out
