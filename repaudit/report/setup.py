"""The evaluation setup of a paper appendix: one row per setting any run records, one cell per run, each cell's text
with where it came from. :func:`setup_rows` reads each task's record in the one vocabulary
(:mod:`repaudit.vocabulary`) — the same for a repaudit run and any other harness's file — and its callers see rows of
cells only.

A value the file does not record is ``not recorded`` (never guessed); a harness default is shown as such, with the
harness, the version the file records and where the default lives in a footnote (of an unrecorded version: not
shown as a value); a derived value says how; a setting that does not apply is ``n/a`` with why; a value that holds
for some of a run's tasks but not others lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from repaudit.importers.comparable import ComparableRun
from repaudit.vocabulary import Recorded, Value, shown, text

Provenance = Literal["recorded", "harness default", "derived", "not recorded", "not applicable"]


@dataclass(frozen=True)
class SetupCell:
    """One run's value of one setting.

    Attributes:
        text: the value as one line of plain text (the renderer escapes it); ``not recorded`` where the file says
            nothing, ``n/a`` where the setting does not apply.
        provenance: recorded (the file says so), harness default (the harness chose it; ``note`` names the harness,
            its version and where the default lives), derived (computed from what the file records; ``note`` says
            how), not recorded, or not applicable (``note`` says why).
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
    """A factor value as one line, spelt as :func:`repaudit.vocabulary.text` spells it (``none``, ``1.0``,
    ``true``): hashes cut to 12 characters, lists and dicts joined."""
    if isinstance(value, str) and _HEX.match(value):
        return value[:12] + "…"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value) or "none"
    return text(value).replace("\n", "\\n")


def _cell(v: Value | None) -> SetupCell:
    """One value as a cell, with its provenance (see the module docstring)."""
    if v is None or v.source == "not_recorded":
        return SetupCell("not recorded", "not recorded")
    if v.source == "not_applicable":
        return SetupCell("n/a", "not applicable", v.note)
    if v.source == "default":
        if not v.known:  # a default of a version the file does not record: not shown as a value
            return SetupCell("not recorded", "not recorded", shown(v))
        cell = "not set" if v.value is None and v.note else _text(v.value)
        return SetupCell(cell, "harness default", f"default of {v.harness} {v.version} ({v.key})"
                         + (f": {v.note}" if v.note else ""))
    if v.source == "derived":
        return SetupCell(_text(v.value), "derived", v.key or "")
    return SetupCell(_text(v.value))


_ABSENT = Value()


def _get(path: str) -> Callable[[Recorded, ComparableRun], Value]:
    return lambda rec, _run: rec.get(path, _ABSENT)


def _decoding(rec: Recorded, _run: ComparableRun) -> Value:
    """greedy, sampling with its settings, or no generation (log-likelihood scoring)."""
    sample = rec.get("generation.do_sample", _ABSENT)
    if sample.source == "not_applicable":
        return Value(value="none: log-likelihood scoring", source="derived", key=sample.note)
    if not sample.known:
        return sample
    if not sample.value:
        return sample.model_copy(update={"value": "greedy"})
    parts = [f"{p.partition('.')[2]} {_text(v.value)}" for p, v in rec.items()
             if p in ("generation.temperature", "generation.top_p", "generation.top_k", "generation.sampling_seed")
             and v.known]
    return sample.model_copy(update={"value": "sampling: " + ", ".join(parts)})


def _prompt(rec: Recorded, _run: ComparableRun) -> Value:
    for path in ("prompt.prompt_format", "prompt.prompt_function", "prompt.doc_to_text", "prompt.solver_plan",
                 "prompt.prompt_version"):
        if rec.known(path):
            return rec[path]
    return _ABSENT


def _task_hash(rec: Recorded, _run: ComparableRun) -> Value:
    return rec["data.content_sha256"] if rec.known("data.content_sha256") else rec.get("data.task_hash", _ABSENT)


def _seeds(rec: Recorded, _run: ComparableRun) -> Value:
    names = {"seeds.seed": "python", "seeds.numpy_seed": "numpy", "seeds.torch_seed": "torch"}
    got = {names[p]: rec[p] for p in names if p in rec}
    known = {k: v.value for k, v in got.items() if v.known}
    if not known:
        return _ABSENT
    sources = {v.source for v in got.values() if v.known}
    return Value(value={k: known.get(k, "not recorded") for k in got},
                 source="recorded" if sources == {"recorded"} else "derived" if "derived" in sources else "default",
                 key="the seeds' own keys", harness=next((v.harness for v in got.values() if v.harness), None),
                 version=next((v.version for v in got.values() if v.version), None))


def _versions(rec: Recorded, _run: ComparableRun) -> Value:
    keep = [f"software.{k}" for k in ("lm_eval", "lighteval_commit", "inspect_ai", "repaudit", "repaudit_commit",
                                      "vllm", "transformers", "torch", "python")]
    got = {p.partition(".")[2]: rec[p].value for p in keep if rec.known(p)}
    return Value(value=got, source="recorded", key="software versions") if got else _ABSENT


def _wall(_rec: Recorded, run: ComparableRun) -> Value:
    """The run's wall-clock time as its file records it, with model load and scoring where recorded (NeurIPS Q8)."""
    wall = run.compute.get("wall_s")
    if wall is None:
        return _ABSENT
    parts = [f"{name} {run.compute[k].value:.1f} s" for k, name in (("model_load_s", "model load"),
                                                                   ("eval_s", "scoring")) if k in run.compute]
    text = f"{wall.value:.1f} s" + (f" ({', '.join(parts)})" if parts else "")
    return wall.model_copy(update={"value": text})


def _threads(_rec: Recorded, run: ComparableRun) -> Value:
    return run.compute.get("torch_threads", _ABSENT)


def _harness(_rec: Recorded, run: ComparableRun) -> Value:
    return Value(value=run.source, source="recorded", key="the file's format and version")


#: (setting, reader of one task's record) in the order a reader looks for them
ROWS: list[tuple[str, Callable[[Recorded, ComparableRun], Value]]] = [
    ("model", _get("model.name")), ("model revision", _get("model.revision")),
    ("model commit (sha)", _get("model.sha")), ("weights sha256", _get("model.weights_sha256")),
    ("weights format", _get("model.weights_format")), ("weights quantisation", _get("model.weights_quantisation")),
    ("harness", _harness), ("task", _get("data.task")),
    ("task version", _get("data.task_version")), ("task data hash", _task_hash), ("split", _get("data.split")),
    ("docs evaluated", _get("data.n_docs")), ("doc limit", _get("data.limit")),
    ("n-shot", _get("fewshot.num_fewshot")), ("few-shot selection", _get("fewshot.sampler")),
    ("few-shot split", _get("fewshot.fewshot_split")), ("few-shot seed", _get("seeds.fewshot_seed")),
    ("prompt format", _prompt), ("chat template applied", _get("prompt.chat_template")),
    ("system prompt", _get("prompt.system_prompt")), ("decoding", _decoding),
    ("max new tokens", _get("generation.max_gen_toks")), ("stop sequences", _get("generation.until")),
    ("dtype", _get("serving.dtype")), ("serving quantisation", _get("serving.quantization")),
    ("batch size", _get("serving.batch_size")), ("backend", _get("serving.backend")),
    ("scoring strategy", _get("serving.scoring_strategy")), ("device", _get("serving.device")),
    ("GPUs", _get("hardware.gpus")), ("CPU", _get("hardware.cpu_model")), ("CPU cores", _get("hardware.cpu_count")),
    ("torch threads", _threads), ("wall time", _wall),
    ("library versions", _versions), ("seeds (python, numpy, torch)", _seeds),
]


def _run_cell(run: ComparableRun, read: Callable[[Recorded, ComparableRun], Value]) -> SetupCell:
    """One run's cell: the value every task agrees on, else each task's (``task: value``)."""
    cells = {task: _cell(read(rec, run)) for task, rec in run.factors.items()}
    if not cells:
        return SetupCell("not recorded", "not recorded")
    texts = list(dict.fromkeys(c.text for c in cells.values()))
    if len(texts) == 1:
        return next(iter(cells.values()))
    by_task = "; ".join(f"{t}: {c.text}" for t, c in list(cells.items())[:4])
    more = f"; … ({len(cells)} tasks)" if len(cells) > 4 else ""
    notes = [c.note for c in cells.values() if c.note]
    kinds = [c.provenance for c in cells.values()]
    return SetupCell(by_task + more, "recorded" if "recorded" in kinds else kinds[0], notes[0] if notes else "")


def setup_rows(runs: list[ComparableRun]) -> list[SetupRow]:
    """The setup table of ``runs`` (one cell per run, in order): every setting of :data:`ROWS` that at least one
    run records, each cell with its provenance (see :class:`SetupCell`). Reads nothing but the runs."""
    out = []
    for setting, read in ROWS:
        row = SetupRow(setting, [_run_cell(run, read) for run in runs])
        if any(c.provenance not in ("not recorded", "not applicable") for c in row.cells):
            out.append(row)
    return out
