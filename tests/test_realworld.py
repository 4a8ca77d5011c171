"""compare on real files from public repositories nobody in this project wrote (tests/realworld/): every case's
``truth.json`` was computed from the raw files by code that does not import repaudit (tests/realworld/truth_lib.py),
and compare's JSON must say the same — the settings each file records (and only those shown as recorded), the
settings that differ (none invented), those that apply to one side only, scores, flips and scored answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from repaudit.audit.compare import compare, load_run

CASES = Path(__file__).resolve().parent / "realworld" / "cases"
PAIRS = sorted(p.name for p in CASES.iterdir() if (p / "truth.json").is_file()
               and json.loads((p / "truth.json").read_text())["kind"] == "pair") if CASES.is_dir() else []
REFUSED = sorted(p.name for p in CASES.iterdir() if (p / "truth.json").is_file()
                 and json.loads((p / "truth.json").read_text())["kind"] == "refusal") if CASES.is_dir() else []


def _truth(case: str) -> dict:
    return json.loads((CASES / case / "truth.json").read_text())


def _side(case: str, t: dict, k: str) -> Path:
    return CASES / case / (t.get(f"results_{k}") or t[k])


@pytest.fixture(scope="module")
def compared() -> dict:
    """compare of every pair, once per module."""
    return {}


def _compare(case: str, compared: dict):
    if case not in compared:
        t = _truth(case)
        a, b = load_run(_side(case, t, "a")), load_run(_side(case, t, "b"))
        compared[case] = (t, a, b, compare(a, b, n_boot=200))
    return compared[case]


def _same(x, y) -> bool:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) \
            and not isinstance(y, bool):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(x) and math.isnan(y))
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))
    return x == y


def _settings(t: dict) -> list[tuple[str | None, str, dict]]:
    """(task or None for every task, path, the truth's entry) of every setting the truth states."""
    out = [(None, p, e) for p, e in t.get("settings", {}).items()]
    out += [(task, p, e) for task, paths in t.get("settings_by_task", {}).items() for p, e in paths.items()]
    return out


@pytest.mark.parametrize("case", PAIRS)
def test_settings_are_shown_as_recorded_exactly_where_the_file_holds_them(case, compared):
    """Every setting a file holds is read with its value; a setting it does not hold is never shown as recorded."""
    t, a, b, c = _compare(case, compared)
    checked = 0
    for task, path, e in _settings(t):
        for k, run in (("a", a), ("b", b)):
            tasks = [task] if task is not None else list(run.factors)
            for name in tasks:
                rec = run.factors.get(name)
                if rec is None:
                    continue
                v = rec.get(path)
                held = e[f"{k}_recorded"] and e[k] is not None
                checked += 1
                if held:  # read, with its value (or kept beside its reason where it does not apply)
                    assert v is not None and v.source in ("recorded", "not_applicable"), (case, k, name, path, v)
                    assert _same(v.value, e[k]), (case, k, name, path, v.value, e[k])
                elif v is not None:
                    assert v.source != "recorded" or v.value is None, (case, k, name, path, v)
    # a truth that states settings must be checked against the runs' records, never skipped over as "missing"
    assert checked or not _settings(t), (case, "no setting of the truth was found in either run")


@pytest.mark.parametrize("case", PAIRS)
def test_no_difference_is_invented_and_none_is_missed(case, compared):
    """The settings compare names as differing, among those the truth states, are exactly the truth's; a setting
    that applies to one side only is n/a there, never a difference."""
    t, _, _, c = _compare(case, compared)
    for task in {r.task for r in c.factors}:
        # the settings the truth states on both sides (a task it cannot pair, e.g. renamed, has one side only)
        stated = {p for tk, p, e in _settings(t) if tk in (None, task) and e["a_recorded"] and e["b_recorded"]}
        want = set(t.get("differs", [])) | set(t.get("differs_by_task", {}).get(task, []))
        rows = {r.path: r for r in c.factors if r.task == task}
        got = {p for p, r in rows.items() if r.status == "differs" and (p in stated or p in want)}
        assert got <= want, (case, task, "invented", got - want)
        for p in want - got:
            r = rows.get(p)
            entry = next((e for tk, q, e in _settings(t) if q == p and tk in (None, task)), None)
            nulls = entry is not None and None in (entry["a"], entry["b"])
            # a difference compare does not call one: two spellings judged one setting (shown with the note), or a
            # side the file left unset (null), whose harness default compare cannot know (shown as unknown)
            assert r is not None and ((r.status == "same" and r.note) or (nulls and r.status == "unknown")), \
                (case, task, "missed", p, r)
        na = {**t.get("not_applicable", {}), **t.get("not_applicable_by_task", {}).get(task, {})}
        rows_by = {r.path: r for r in c.factors if r.task == task}
        for path, side in na.items():
            if path in rows_by:
                assert rows_by[path].status == "n/a", (case, task, path, rows_by[path])
                for k in ("a", "b") if side == "both" else (side,):
                    assert getattr(rows_by[path], k).source == "not_applicable", (case, task, path, k)


@pytest.mark.parametrize("case", PAIRS)
def test_scores_flips_and_scored_answers_equal_the_truth(case, compared):
    t, a, b, c = _compare(case, compared)
    checked = 0
    for task, metrics in t.get("scores", {}).items():
        for metric, v in metrics.items():
            for k, run in (("a", a), ("b", b)):
                name = t.get("task_map", {}).get(task, {}).get(k, task)  # a cross-format pair names it twice
                got = run.tasks.get(name)
                key = next((m for m in _metric_names(metric) if got is not None and m in got.reported), None)
                if v.get(k) is None or key is None:
                    continue
                checked += 1
                assert _same(got.reported[key][0], v[k]), (case, task, metric, k)
    # a truth that states scores must find them in the runs (a reader that names every task or metric otherwise
    # would pass by checking nothing)
    assert checked or not any(v.get(k) is not None for m in t.get("scores", {}).values() for v in m.values()
                              for k in "ab"), (case, "no score of the truth was found in either run")
    for task, per in t.get("flips", {}).items():
        named = {f.metric for f in c.flips if f.task == task}
        for metric, want in per.items():
            # inspect's truth names a scorer ("choice") where compare names its metric ("accuracy"); docs by the
            # harness's own sample id where it has one
            m = metric if metric in named or named & set(per) or len(named) != 1 else next(iter(named))
            got = {d: sorted(str(f.key) if f.key is not None else f.doc_id for f in c.flips
                             if f.task == task and f.metric == m and f.direction == d)
                   for d in ("right_to_wrong", "wrong_to_right")}
            keyed = any(f.key is not None for f in c.flips if f.task == task)
            assert got == {d: sorted(str(x) if keyed else x for x in want[d]) for d in got}, (case, task, metric)
    scored = {(s.task, s.filter): s for s in c.scored}
    for key, want in t.get("filtered", {}).items():
        task, _, flt = key.partition(",")
        s = scored.get((task, flt)) if flt else next((v for (tk, _), v in scored.items() if tk == task), None)
        assert s is not None, (case, key, list(scored))
        got = {"n_shared": s.n_shared, "changed": s.changed, "empty_a": s.empty_a, "empty_b": s.empty_b,
               "raw_empty_a": s.raw_empty_a, "raw_empty_b": s.raw_empty_b}
        assert got == {k: want[k] for k in got}, (case, key)


def _metric_names(metric: str) -> list[str]:
    """The keys a truth's metric name may have in compare: as written; a HELM statistic of a one-split run without
    ``@<split>``; inspect's ``<scorer>/<metric>`` as ``<metric>`` (one scorer) or ``<metric>,<scorer>`` (several) —
    its ``stderr`` is the score's standard error, no score."""
    out = [metric]
    if "@" in metric:
        out.append(metric.rsplit("@", 1)[0])
    if "/" in metric:
        scorer, _, name = metric.partition("/")
        out += [] if name == "stderr" else [name, f"{name},{scorer}"]
    return out


@pytest.mark.parametrize("case", PAIRS)
def test_every_format_shows_a_value_that_is_not_recorded_with_where_it_came_from(case, compared):
    """A harness default, a derived value, a setting that does not apply: each shown with its provenance in the
    terminal, Markdown, LaTeX and HTML reports wherever its row is shown."""
    import io

    from rich.console import Console

    from repaudit.report.compare import render_latex, render_markdown, render_rich
    from repaudit.report.compare_text import factor_lines
    from repaudit.report.html import render_compare_html

    _, _, _, c = _compare(case, compared)
    lines = factor_lines(c, 400)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_rich(c, console)
    texts = {"md": render_markdown(c), "tex": render_latex(c), "html": render_compare_html(c),
             "txt": console.file.getvalue()}
    for f in c.differing():
        for v in (f.a, f.b):
            if v.source == "default":
                marks = ("default of", "not set (", "default; ")
                assert any(m in (x.a + x.b) for x in lines for m in marks), (case, f.path)
                for fmt, text in texts.items():
                    assert any(m in text for m in marks), (case, fmt, f.path)
            elif v.source == "derived":
                assert any("(derived)" in x.a + x.b for x in lines), (case, f.path)
                for fmt, text in texts.items():
                    assert "(derived)" in text, (case, fmt, f.path)


@pytest.mark.parametrize("case", PAIRS)
def test_per_doc_facts_a_file_records_are_never_reported_as_not_recorded(case, compared):
    """Prompts, doc counts and a score's recorded uncertainty: where the truth finds them in both files, compare has
    them — the prompt texts compared doc by doc, each side's doc count on the row, each side's stderr read."""
    t, a, b, c = _compare(case, compared)
    for task, pd in t.get("per_doc", {}).items():
        if pd.get("prompts_a") and pd.get("prompts_b"):
            ag = next((d for d in c.docs if d.task == task or task.startswith(d.task)), None)
            assert ag is not None and ag.prompt_hash_equal is not None, (case, task, "prompts not compared")
    for task, sides in t.get("n_docs", {}).items():
        for k, run in (("a", a), ("b", b)):
            if sides.get(k) is not None and task in run.tasks:
                assert run.tasks[task].n_docs == sides[k], (case, task, k)
    for task, metrics in t.get("stderr", {}).items():
        for metric, sides in metrics.items():
            for k, run in (("a", a), ("b", b)):
                if sides.get(k) is not None and task in run.tasks and metric in run.tasks[task].reported:
                    assert _same(run.tasks[task].reported[metric][1], sides[k]), (case, task, metric, k)


@pytest.mark.parametrize("case", PAIRS)
def test_flips_are_listed_wherever_both_files_carry_per_doc_rows(case, compared):
    """Every pair whose files carry per-doc rows on both sides, on a 0/1 metric with a doc that flipped, lists its
    flips (none is lost to an unpaired row)."""
    t, _, _, c = _compare(case, compared)
    want = {task for task, per in t.get("flips", {}).items() if any(f["right_to_wrong"] or f["wrong_to_right"]
                                                                       for f in per.values())}
    got = {f.task for f in c.flips}
    assert all(any(g == w or w.startswith(g) or g.startswith(w) for g in got) for w in want), (case, want, got)


@pytest.mark.parametrize("case", REFUSED)
def test_another_tools_file_is_refused_naming_the_tool(case):
    from typer.testing import CliRunner

    from repaudit.cli import app

    t = _truth(case)
    f = CASES / case / t["file"]
    res = CliRunner().invoke(app, ["compare", str(f), str(f)])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert t["tool"] in line and "does not read" in line, line


def test_the_corpus_names_no_path_of_the_machine_that_built_it():
    """What the project wrote into tests/realworld/ (truths, notes, tools, SOURCES.md, sources.json) names no absolute
    path of a machine (a checkout, a virtual environment, the data kept beside it, the git mirrors): a clone elsewhere
    reads the same. The copied files themselves are left byte for byte as their repositories hold them (an lm-eval
    results file records its author's ``config_source``)."""
    import re

    root = CASES.parent
    copied = {root / m["file"] for m in json.loads((root / "sources.json").read_text())}
    ours = [p for p in root.rglob("*") if p.is_file() and p not in copied and "__pycache__" not in p.parts]
    absolute = re.compile(r"(?<![\w.])/(?:work|root|home|tmp|Users|opt|mnt)/")
    bad = [f"{p.relative_to(root)}:{i}" for p in ours for i, line in enumerate(
        p.read_text(encoding="utf-8", errors="replace").splitlines(), 1) if absolute.search(line)]
    assert len(ours) > 50 and not bad, bad
