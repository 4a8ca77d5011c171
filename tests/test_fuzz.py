"""Seeded fuzzing of ``repaudit compare`` on mutations of real files (the long run is ``bench/fuzz.py``).

Every case must exit 0 with a sane report, or exit 1 with exactly one ``error:`` line and no output
file; never a traceback; injected strings are shown literally.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from fuzzformats import HELM_CATEGORIES, HelmGenerator, eee_bases  # noqa: E402
from fuzzgen import (  # noqa: E402
    CATEGORIES,
    EVAL_CATEGORIES,
    FORMATS,
    EvalGenerator,
    Generator,
    check_in_browser,
    headless_chromium,
    run_case,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lmeval"
LIGHTEVAL = Path(__file__).resolve().parent / "fixtures" / "lighteval" / "arc_easy_0shot"
INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect" / "arc_easy_a.eval"
CASES_PER_CATEGORY = 12  # bench/fuzz.py runs thousands; here every category × every format, twice or more


@pytest.fixture(scope="module")
def bases(tiny_model, shared_data, lmeval_runs, tmp_path_factory):
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    work = tmp_path_factory.mktemp("fuzz-bases")
    # 24 docs: above the floor of a verdict, so that one cluster on every doc reaches the clustered interval
    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=24, batch_size=4,
                        cache_dir=work / "cache"))
    write_record(rec, work / "run.json")
    s1 = next((lmeval_runs / "s1").rglob("results_*.json"))
    # 60 samples of s1 with the results' means recomputed on them, so the pair stays consistent
    import json

    lines = next(s1.parent.glob("samples_*.jsonl")).read_text().splitlines()[:60]
    res = json.loads(s1.read_text())
    for m in ("acc", "acc_norm"):
        res["results"]["arc_easy"][f"{m},none"] = sum(json.loads(x)[m] for x in lines) / len(lines)
    d = work / "s1"
    d.mkdir()
    (d / s1.name).write_text(json.dumps(res))
    samples = d / next(s1.parent.glob("samples_*.jsonl")).name
    samples.write_text("\n".join(lines) + "\n")
    return [("repaudit", work / "run.json", None), ("lmeval", d / s1.name, samples),
            ("lmeval", FIXTURES / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json", None),
            ("lmeval", FIXTURES / "lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486.json",
             None),
            ("lighteval", next(LIGHTEVAL.rglob("results_*.json")), None)]


def test_compare_survives_mutated_inputs(bases, tmp_path):
    gen = Generator(bases, tmp_path / "cases", seed=1234)
    failures = []
    n = CASES_PER_CATEGORY * len(CATEGORIES)
    statuses: dict[str, int] = {}
    pages = []
    one_cluster = 0
    for i in range(n):
        category = CATEGORIES[i % len(CATEGORIES)]
        fmt = FORMATS[(i // len(CATEGORIES)) % len(FORMATS)]
        case = gen.case(i, category)
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(case, fmt, out_dir)
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
        if category == "one_cluster" and outcome.status == "ok":  # the clustered interval's one-cluster path ran
            one_cluster += any("one cluster" in f.read_text(errors="replace") for f in out_dir.glob("report.*"))
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
        elif fmt == "html" and outcome.status == "ok":
            pages.append((i, category, out_dir / "report.html"))
    driver, why = headless_chromium()
    if driver is not None:  # the same pages in a real browser: nothing runs, every page finishes
        try:
            for i, category, page in pages:
                outcome = check_in_browser(driver, page)
                if outcome.status != "ok":
                    failures.append((i, category, "html", outcome.status, outcome.detail[:400]))
        finally:
            driver.quit()
    assert not failures, failures[:5]
    assert pages  # HTML reports were written and judged
    assert statuses.get("ok", 0) > 20 and statuses.get("refused", 0) > 20, statuses  # both paths exercised
    assert one_cluster, "no one-cluster case reached a clustered interval"


def test_compare_survives_mutated_eval_logs(tmp_path):
    """inspect_ai .eval logs: truncated ZIPs, flipped bytes, bombs (declared and lying sizes), path-traversal
    entry names, other compression methods, wrong types inside members, injections: no traceback, no
    partial output, every refusal one line."""
    gen = EvalGenerator(INSPECT, tmp_path / "cases", seed=7)
    failures, statuses = [], {}
    for i in range(3 * len(EVAL_CATEGORIES) * 2):
        category = EVAL_CATEGORIES[i % len(EVAL_CATEGORIES)]
        fmt = FORMATS[(i // len(EVAL_CATEGORIES)) % len(FORMATS)]
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(gen.case(i, category), fmt, out_dir)
        statuses[(category, outcome.status)] = statuses.get((category, outcome.status), 0) + 1
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
    assert not failures, failures[:5]
    # the archive-level attacks are refused every time; an injected task name is reported literally
    for category in ("zip_truncate", "zip_declared_bomb", "zip_lying_size", "zip_traversal", "zip_method",
                     "zip_duplicate_sample"):
        assert statuses.get((category, "refused"), 0) == 6, (category, statuses)
    assert statuses.get(("zip_injection", "ok"), 0) == 6, statuses


def test_compare_survives_mutated_helm_folders_and_legacy_eee_records(tmp_path):
    """The formats people publish: HELM run folders with one file mutated or removed, Every Eval Ever 0.1/0.2
    records mutated like any run file — one error line or a sane report in every format, never a traceback or a
    partial output file; an injected task name is shown literally."""
    helm = HelmGenerator(tmp_path / "helm", seed=11)
    eee = Generator(eee_bases(), tmp_path / "eee", seed=13)
    failures, statuses = [], {}
    cases = [(helm, HELM_CATEGORIES[i % len(HELM_CATEGORIES)]) for i in range(4 * len(HELM_CATEGORIES))]
    cases += [(eee, CATEGORIES[i % len(CATEGORIES)]) for i in range(4 * len(CATEGORIES))]
    for i, (gen, category) in enumerate(cases):
        fmt = FORMATS[(i // 13) % len(FORMATS)]
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(gen.case(i, category), fmt, out_dir)
        key = ("helm" if gen is helm else "eee", outcome.status)
        statuses[key] = statuses.get(key, 0) + 1
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
    assert not failures, failures[:5]
    for kind in ("helm", "eee"):  # both paths exercised for both formats
        assert statuses.get((kind, "ok"), 0) >= 8 and statuses.get((kind, "refused"), 0) >= 8, statuses


OBQA = Path(__file__).resolve().parent / "fixtures" / "lmeval_config" / "openbookqa_0shot"
#: every command that reads a path, with BAD where the bad path goes, and the exit code of bad input
PATH_COMMANDS = [
    (["compare", "BAD", str(OBQA), "-o", "OUT.md"], 1),
    (["compare", str(OBQA), str(OBQA), "--samples-a", "BAD", "-o", "OUT.md"], 1),
    (["gate", "BAD", str(OBQA), "--max-drop", "20", "-o", "OUT.md"], 65),
    (["gate", str(OBQA), str(OBQA), "--policy", "BAD", "-o", "OUT.md"], 65),
    (["export", "BAD", "--evaluator-relationship", "third_party", "--model-id", "org/m", "--organization", "me",
      "-o", "OUT"], 1),
    (["attribute", "BAD", str(OBQA), "--dry-run"], 1),
    (["attribute", str(OBQA), str(OBQA.with_name("openbookqa_3shot")), "--noise-floor", "BAD", "--dry-run"], 1),
    (["variance", "BAD", str(OBQA), "--across", "seed", "-o", "OUT.md"], 1),
    (["variance", "--base", "BAD", "--dry-run"], 1),
    (["sweep", "--base", "BAD", "--factor", "batch_size", "--values", "1,2", "--dry-run"], 1),
    (["reproduce", "--base", "BAD", "--task", "arc_easy", "--target", "40", "--dry-run"], 1),
    (["run", "--task-config", "BAD", "--limit", "2", "-o", "OUT.json"], 1),
    (["run", "--fewshot-from", "BAD", "--limit", "2", "-o", "OUT.json"], 1),
]


def _bad_paths(root: Path) -> dict[str, Path]:
    """A symlink loop (A → B → A), a link to itself, a FIFO, an unreadable file and a missing one."""
    import os

    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    (root / "self").symlink_to(root / "self")
    os.mkfifo(root / "fifo")
    out = {"loop": root / "a", "self_loop": root / "self", "fifo": root / "fifo", "missing": root / "nope.json"}
    locked = root / "locked.json"
    locked.write_text("{}")
    locked.chmod(0)
    if not os.access(locked, os.R_OK):  # not root: a file without read permission
        out["unreadable"] = locked
    else:  # root reads any file: a sysctl that is write-only for root too is unreadable
        proc = Path("/proc/sys/vm/drop_caches")
        if proc.exists() and not os.access(proc, os.R_OK):
            (root / "unreadable.json").symlink_to(proc)
            out["unreadable"] = root / "unreadable.json"
    return out


def _bad_path_case(args: list[str], code: int, kind: str, path: Path, out: Path):
    """One command on one bad path: ``None`` when it is refused in one line naming the path, else what went wrong."""
    import signal

    from typer.testing import CliRunner

    from repaudit.cli import app

    def timeout(*_):
        raise TimeoutError("the command blocked (a FIFO opened for reading?)")

    argv = [str(path) if a == "BAD" else str(out) + a[3:] if a.startswith("OUT") else a for a in args]
    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(60)
    try:
        res = CliRunner().invoke(app, argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    if (res.exit_code != code or len(errors) != 1 or "Traceback" in res.output + res.stderr
            or any(out.parent.glob(out.name + "*"))
            or (res.exception is not None and not isinstance(res.exception, SystemExit))):
        return (args[0], kind, res.exit_code, res.stderr[-300:], repr(res.exception))
    if kind != "missing" and str(path) not in errors[0]:
        return (args[0], kind, "the line does not name the path", errors[0])
    return None


def test_every_command_that_takes_a_path_refuses_loops_fifos_and_unreadable_files(tmp_path):
    """Symlink loops, FIFOs, unreadable and missing files, in every path a command reads: one ``error:`` line and
    the bad-input exit code, never a traceback, a hang on the FIFO or an output file."""
    bad = _bad_paths(tmp_path)
    assert {"loop", "self_loop", "fifo", "missing"} <= bad.keys()
    failures = [f for n, (args, code) in enumerate(PATH_COMMANDS) for kind, path in bad.items()
                if (f := _bad_path_case(args, code, kind, path, tmp_path / f"out{n}{kind}")) is not None]
    assert not failures, "\n".join(map(repr, failures))


#: each command's cheapest valid call (inputs the repository ships, or a bad model or data path that is refused once
#: the options pass): an option's value is judged by the command's own checks before any of this is read
_GSM = str(FIXTURES / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json")
_BASES = {
    "run": ["--task", "arc_easy", "--model", "/nonexistent/model", "-o", "OUT.json"],
    "compare": [_GSM, _GSM],
    "gate": [_GSM, _GSM, "--max-drop", "20"],
    "sweep": ["--base", str(OBQA), "--factor", "batch_size", "--values", "1,2", "--dry-run"],
    "attribute": [str(OBQA), str(OBQA.with_name("openbookqa_3shot")), "--dry-run"],
    "reproduce": ["--base", str(OBQA), "--task", "openbookqa", "--target", "40", "--dry-run"],
    "variance": ["--base", str(OBQA), "--dry-run"],
    "export": [_GSM, "--evaluator-relationship", "third_party", "--model-id", "org/m", "--organization", "me",
               "-o", "OUT"],
    "determinism": ["--model", "/nonexistent/model"],
    "appendix": [_GSM, _GSM],
}
#: the values every numeric option is tried at
EXTREMES = ("0", "-1", "1e12", "1e308", "inf", "nan")


def _numeric_options() -> list[tuple[str, str, type]]:
    """(command, option, int or float) of every numeric option of every command, from the commands themselves."""
    import typing

    import typer

    from repaudit.cli import app

    out = []
    for name, cmd in typer.main.get_command(app).commands.items():
        for p in cmd.params:
            td = getattr(p, "type_descriptor", None)
            if td is None or getattr(p, "is_flag", False):
                continue
            kinds = [a for a in typing.get_args(td.annotation) if a is not type(None)] or [td.annotation]
            if kinds[0] in (int, float):
                out.append((name, p.opts[0], kinds[0]))
    return out


def test_every_numeric_option_of_every_command_at_extreme_values(tmp_path):
    """0, −1, 1e12, 1e308, inf and nan in every numeric option of every command (read from the commands, so a new
    option is fuzzed too): a usage error or a refusal in one ``error:`` line, or a report — never a traceback."""
    from typer.testing import CliRunner

    from repaudit.cli import app

    options = _numeric_options()
    assert {c for c, _, _ in options} >= {"run", "compare", "gate", "sweep", "attribute", "reproduce", "variance",
                                          "export", "determinism", "appendix"}, options
    assert ("gate", "--margin", float) in options and ("compare", "--tie-eps", float) in options
    runner = CliRunner()
    failures = []
    for n, (command, option, kind) in enumerate(options):
        base = _BASES[command]
        for value in EXTREMES:
            if kind is int and value in ("1e12", "1e308", "inf", "nan"):
                value = {"1e12": str(10 ** 12)}.get(value, value)  # an int of 1e12; the others are no int at all
            out = tmp_path / f"o{n}{EXTREMES.index(value) if value in EXTREMES else 2}"
            argv = [command, *(str(out) + a[3:] if a.startswith("OUT") else a for a in base), option, value]
            if command == "gate" and option in ("--max-drop", "--margin"):
                argv = [command, _GSM, _GSM, option, value]
            res = runner.invoke(app, argv)
            errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
            decision = command == "gate" and res.exit_code in (0, 1, 2) and not errors  # GO, NO-GO, INCONCLUSIVE
            bad = (res.exception is not None and not isinstance(res.exception, SystemExit)) or \
                "Traceback" in res.output or (res.exit_code != 0 and not decision and len(errors) != 1)
            if bad:
                failures.append((command, option, value, res.exit_code, repr(res.exception), res.stderr[-300:]))
    assert not failures, "\n".join(map(repr, failures[:10]))
