"""Every count printed beside a row equals the row's own (issue 63, item 3): compare's and gate's doc counts, the
MDE sentence, the footnotes and the mechanism lines against the row's ``n_paired`` in the JSON; variance's ``sd last
k`` legend against the rows' k; the appendix's runs and tasks against its scores. Over the fixtures' JSON and text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
#: pairs whose docs are the same, and pairs where one run scored more docs than the other (lighteval: 40 vs 100)
PAIRS = [
    (FIX / "lmeval_config" / "openbookqa_0shot", FIX / "lmeval_config" / "openbookqa_3shot"),
    (FIX / "lighteval" / "arc_easy_0shot", FIX / "lighteval" / "arc_easy_3shot"),
    (FIX / "lighteval" / "arc_easy_3shot", FIX / "lighteval" / "arc_easy_0shot"),
    (FIX / "lmeval_gsm8k" / "gsm8k_32", FIX / "lmeval_gsm8k" / "gsm8k_256"),
    (FIX / "lmeval_hellaswag" / "hellaswag_0shot", FIX / "lmeval_hellaswag" / "hellaswag_2shot"),
]
IDS = [f"{a.name}-vs-{b.name}" for a, b in PAIRS]


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, [*map(str, args), "--n-boot", "200"])
    assert res.exit_code in (0, 2), res.output  # gate: GO or INCONCLUSIVE
    return res.stdout


def _counts(text: str) -> list[int]:
    """Every doc count a row's sentence states about the docs the row rests on."""
    pats = [r"; ([\d,]+) docs[,)]", r"effective docs of ([\d,]+)", r"on the ([\d,]+) docs this row is paired on",
            r"\(this row is paired on ([\d,]+)\)", r"scored on the ([\d,]+) docs both runs have",
            r"paired on ([\d,]+) shared docs", r"the ([\d,]+) docs these runs scored"]
    return [int(m.replace(",", "")) for p in pats for m in re.findall(p, text)]


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
def test_compare_counts_beside_a_row_are_the_rows_own(a, b):
    data = json.loads(_cli("compare", a, b, "--json"))
    text = _cli("compare", a, b, "--format", "markdown")
    lines = text.splitlines()
    rows = [r for r in data["scores"] if r["power"] is not None]
    assert rows
    for r in rows:
        n = r["n_paired"]
        said = [x for x in lines if x.startswith(f"- {r['task']} {r['metric']}: MDE")]
        assert len(said) == 1, r["metric"]
        assert _counts(said[0]) and set(_counts(said[0])) == {n}, (said[0], n)
        assert _counts(r["power"]["note"]) in ([], [n]), r["power"]["note"]
        assert r["power"]["n_docs"] == n
        if r["subset"]:  # the footnote of a row on a subset names the row's docs and each file's own count
            assert f"scored on the {n} docs both runs have; the files report A" in text
            assert f"({r['n_a']} docs), B" in text and f"({r['n_b']} docs)" in text
    for m in data["mechanisms"]:  # the docs a mechanism spares are the row's docs or fewer; the same docs: its interval
        row = next(r for r in data["scores"] if (r["task"], r["metric"]) == (m["task"], m["metric"]))
        assert m["n_unaffected"] <= row["n_paired"]
        if m["same_docs_as_row"]:
            assert m["n_unaffected"] == row["n_paired"] and (m["ci_low"], m["ci_high"]) == (row["ci_low"],
                                                                                          row["ci_high"])


@pytest.mark.parametrize("a,b", PAIRS, ids=IDS)
def test_gate_counts_beside_a_row_are_the_rows_own(a, b):
    cmp = {(r["task"], r["metric"]): r for r in json.loads(_cli("compare", a, b, "--json"))["scores"]}
    data = json.loads(_cli("gate", a, b, "--max-drop", "1", "--json"))
    text = _cli("gate", a, b, "--max-drop", "1", "--format", "markdown")
    for r in data["rows"]:
        n = cmp[(r["task"], r["metric"])]["n_paired"]
        assert r["n_docs"] == n
        assert set(_counts(r["reason"])) <= {n}, r["reason"]
        why = [x for x in text.splitlines() if "what the paired test can detect" in x and f"{n} docs" in x]
        if r["decision"] != "PASS" and r["power"] is not None:
            assert why and all(set(_counts(x)) == {n} for x in why), text


def test_the_lighteval_pair_says_one_interval_for_its_one_delta():
    """40 docs both runs scored, no doc affected by the leak: the mechanism line's Δ is the row's, with the row's
    interval (it printed a bootstrap one beside the row's Tango interval, without saying why they differ)."""
    a, b = PAIRS[1]
    res = CliRunner().invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    row = re.search(r"acc +pts↑ +57\.50 +70\.00 +\+12\.50 +(\[\S+, \S+\])", res.stdout).group(1)
    flat = " ".join(res.stdout.split())
    line = flat[flat.index("likely mechanism"):]
    assert line.split(" Flipped docs")[0].endswith(f"Δ +12.50 {row} pts (every doc of the score row: its Δ and "
                                                   "interval)"), line


def test_variance_legend_says_the_k_the_rows_use():
    pythia = sorted((FIX / "pythia" / "160m").glob("*.json"))
    for files, ks in ((pythia[:3], "k = 3 (--last 5; each series has 3 checkpoints)"), (pythia, "k = 5 (noise")):
        data = json.loads(_cli("variance", *files, "--across", "checkpoint", "--task", "piqa,sciq", "--json"))
        assert {x["last_k"] for x in data["checkpoint"]} == {int(ks[4])}
        text = _cli("variance", *files, "--across", "checkpoint", "--task", "piqa,sciq", "--format", "markdown")
        assert f"of the last k checkpoints' scores, {ks}" in text
        taus = [x["kendall_tau"] for x in data["checkpoint"]]
        assert [abs(t) for t in taus] == sorted((abs(t) for t in taus), reverse=True)  # most monotone first
        top = data["checkpoint"][0]
        assert f"most monotone: {top['task']} {top['metric']}" in text


def test_appendix_counts_runs_and_tasks():
    a, b = PAIRS[1]
    text = _cli("appendix", a, b)
    assert "2 runs of 1 task in all, each evaluated once" in text
    res = CliRunner().invoke(app, ["appendix", str(a), str(b), "--names", "x,x"])
    assert res.exit_code == 2 and "--names gives 'x' to more than one run (1 distinct of 2)" in res.stderr
