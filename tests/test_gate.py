"""``repaudit gate`` on real runs: decisions, tiers, multiplicity, exit codes, JUnit XML, the step summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.audit.gate import Policy, PolicyRow, gate, inline_policy, read_policy
from repaudit.cli import app

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"


def _gate(args: list[str], env: dict | None = None):
    return CliRunner().invoke(app, ["gate", *args], env=env)


def test_equivalence_within_3_points_is_go_and_within_half_a_point_inconclusive(lmeval_runs, tmp_path):
    s1, s3 = str(lmeval_runs / "s1"), str(lmeval_runs / "s3")  # float32 vs bfloat16, lm-eval 0.4.13
    res = _gate([s1, s3, "--margin", "3"])
    assert res.exit_code == 0 and res.stdout.startswith("gate: GO"), res.output
    res = _gate([s1, s3, "--margin", "0.5", "--json"])
    assert res.exit_code == 2, res.output
    data = json.loads(res.stdout)
    acc = next(r for r in data["rows"] if r["metric"] == "acc")
    assert data["decision"] == "INCONCLUSIVE" and acc["decision"] == "INCONCLUSIVE"
    # 570 docs cannot decide it: the reason says so and what would, never "N docs would decide it" for N > 570
    assert acc["docs_to_decide"] > 570 and "docs would decide it" not in acc["reason"]
    assert (f"the 570 docs this row is paired on cannot decide it (at the observed difference and spread about "
            f"{acc['docs_to_decide']:,} would: ") in acc["reason"]
    assert "average repeated runs" in acc["reason"] and "evaluate more docs" in acc["reason"]
    # the docs it would take follow the printed interval: d lies below −0.5, so its upper half-width must shrink (as
    # 1/sqrt(n)) to the distance from d to −0.5 for a FAIL
    assert acc["d"] < -0.5 and ": FAIL)" in acc["reason"]
    half = acc["ci_high"] - acc["d"]
    assert acc["docs_to_decide"] == pytest.approx(570 * (half / (abs(acc["d"]) - 0.5)) ** 2, rel=1e-3)
    # the interval inverts the score test: at its ends the one-sided p is α (checked with an independent
    # numerical restricted MLE of the flip probabilities)
    c = compare(load_run(lmeval_runs / "s1"), load_run(lmeval_runs / "s3"), n_boot=200)
    row = next(r for r in c.scores if r.metric == "acc")
    assert acc["test_used"].startswith("score test")
    for end, side in ((acc["ci_low"], 1), (acc["ci_high"], -1)):
        z = _score_z_by_hand(row.right_to_wrong, row.wrong_to_right, row.n_paired, end / 100)
        assert sps.norm.sf(side * z) == pytest.approx(0.05, abs=1e-4)
    assert acc["harmful"] and "dtype" in json.dumps(acc["factors"])
    assert _gate([s1, s3, "--margin", "0.5", "--strict"]).exit_code == 1


def _score_z_by_hand(b: int, c: int, n: int, d0: float) -> float:
    """Tango's continuity-corrected score statistic with the restricted MLE found numerically."""
    import math

    from scipy.optimize import minimize_scalar

    def nll(x):  # x = P(right → wrong); P(wrong → right) = x + d0
        up, down = x + d0, x
        return -(c * math.log(up) + b * math.log(down) + (n - b - c) * math.log(1 - up - down))

    lo = max(1e-12, -d0 + 1e-12)
    x = minimize_scalar(nll, bounds=(lo, (1 - d0) / 2 - 1e-12), method="bounded", options={"xatol": 1e-12}).x
    diff = (c - b) / n - d0
    diff = math.copysign(max(abs(diff) - 1 / n, 0), diff)
    return diff / math.sqrt((x + x + d0 - d0 * d0) / n)


def test_tiers_decide_as_documented():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    # Qwen2.5-1.5B (0.4) as the baseline, pythia-160m (0.3) as the candidate: arc_easy acc drops 30 points
    c = compare(load_run(PUBLIC / "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"),
                load_run(PUBLIC / "pythia__160m-5shot_step143000.json"), n_boot=200)

    def decide(tier: str, multiplicity: str = "none") -> str:
        rows = [PolicyRow(task="arc_easy", metric="acc", test="non_inferiority", margin=1.0, tier=tier),
                PolicyRow(task="*", metric="*", test="non_inferiority", margin=100.0, tier="critical")]
        return gate(c, Policy(rows=rows, multiplicity=multiplicity)).decision

    assert decide("critical") == "NO-GO" and decide("supporting") == "INCONCLUSIVE" and decide("advisory") == "GO"
    assert decide("critical", "holm") == "NO-GO"  # p of the FAIL claim is tiny: it survives Holm too


def test_a_policy_row_that_matches_nothing_is_inconclusive(lmeval_runs):
    c = compare(load_run(lmeval_runs / "s1"), load_run(lmeval_runs / "s3"), n_boot=200)
    g = gate(c, Policy(rows=[PolicyRow(task="mmlu_*", test="non_inferiority", margin=1.0)]))
    assert g.decision == "INCONCLUSIVE" and "matches this policy row" in g.rows[-1].reason
    assert g.not_gated == ["arc_easy acc", "arc_easy acc_norm"]
    assert inline_policy(1.0, None).rows[0].metric == "*"


def test_a_multi_task_gate_reports_adjusted_p_values():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    c = compare(load_run(PUBLIC / "lm-evaluation-harness__llama-13B_mmlu_5-shot.json"),
                load_run(PUBLIC / "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"),
                n_boot=200)
    g = gate(c, inline_policy(1.0, None))
    assert len(g.rows) == 57 and all(r.p_adjusted is not None for r in g.rows)
    assert all(r.p_adjusted >= r.p_raw for r in g.rows)
    ranked = sorted(g.rows, key=lambda r: r.p_pass)  # Holm: the smallest p is multiplied by the family size
    assert ranked[0].p_adjusted == pytest.approx(min(1.0, 57 * ranked[0].p_pass)) or ranked[0].decision == "FAIL"


@pytest.mark.integration
def test_no_go_names_the_prompt_format(default_model_available, shared_data, tmp_path):
    """The default model on 100 ARC-Easy docs (Δ −17 pts, 28 docs right → wrong, 11 back: 60 docs leave the
    margin inside the interval), lm-eval's cloze prompt vs lettered choices, 0-shot: the
    lettered prompt loses points, and a 1-point non-inferiority gate says NO-GO and names the format."""
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    common = dict(task="arc_easy", data_dir=shared_data, limit=100, batch_size=8, scoring_strategy="shared_prefix",
                  cache_dir=tmp_path / "c")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_record(run(RunConfig(**common)), a)
    write_record(run(RunConfig(prompt_format="lettered", **common)), b)
    res = _gate([str(a), str(b), "--max-drop", "1", "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    acc = next(r for r in data["rows"] if r["metric"] == "acc")
    assert data["decision"] == "NO-GO" and acc["decision"] == "FAIL" and acc["ci_high"] < -1
    assert "prompt.prompt_format" in {f["path"] for f in acc["factors"]}
    res = _gate([str(a), str(b), "--max-drop", "1"])
    assert res.stdout.startswith("gate: NO-GO") and "prompt_format: lmeval → lettered" in res.stdout


def test_junit_xml_and_the_step_summary(lmeval_runs, tmp_path):
    from junitparser import Failure, JUnitXml, Skipped

    summary, junit = tmp_path / "summary.md", tmp_path / "gate.xml"
    summary.write_text("earlier step\n")
    res = _gate([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--margin", "0.5", "--junit", str(junit)],
                env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.exit_code == 2, res.output
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "repaudit gate: INCONCLUSIVE" in text
    assert "| **INCONCLUSIVE** |" in text
    xml = JUnitXml.fromfile(str(junit))
    cases = [c for s in xml for c in s]
    assert [c.name for c in cases] == ["arc_easy acc", "arc_easy acc_norm"]
    assert all(any(isinstance(r, Skipped) for r in c.result) for c in cases)
    assert not any(isinstance(r, Failure) for c in cases for r in c.result)
    props = {p.name: p.value for c in cases[:1] for ps in c.iterchildren(__import__("junitparser").Properties)
             for p in ps}
    assert props["test"] == "equivalence" and float(props["d"]) == pytest.approx(-0.877, abs=1e-3)


@pytest.mark.parametrize("policy,needle", [
    ("alpha: 0.05\nrows:\n  - {task: '*', test: equivalence, margin: 1, tier: critical, colour: red}\n",
     "$.rows[0].colour"),
    ("rows:\n  - {task: '*', test: equivalance, margin: 1}\n", "$.rows[0].test"),
    ("rows:\n  - {task: '*', test: equivalence, margin: -1}\n", "$.rows[0].margin"),
    ("rows:\n  - {task: '*', test: equivalence, margin: 1, tier: advisory}\n", "at least one critical row"),
    ("rows: &r\n  - {task: '*', test: equivalence, margin: 1}\nother: *r\n", "aliases"),
])
def test_a_bad_policy_is_one_error_line_with_exit_65(lmeval_runs, tmp_path, policy, needle):
    p = tmp_path / "policy.yaml"
    p.write_text(policy)
    res = _gate([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--policy", str(p)])
    assert res.exit_code == 65, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.stderr


def test_usage_errors_exit_64_and_a_good_policy_reads(lmeval_runs, tmp_path):
    res = _gate([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--margin", "x"])
    assert res.exit_code == 64 and res.stderr.startswith("error:")
    assert _gate([str(lmeval_runs / "s1"), str(lmeval_runs / "s3")]).exit_code == 64  # no policy at all: usage
    p = tmp_path / "gate.yaml"
    p.write_text("alpha: 0.05\nmultiplicity: bh\nrows:\n  - task: arc_*\n    metric: acc\n    test: non_inferiority\n"
                 "    margin: 1.0\n    tier: critical\n")
    assert read_policy(p).multiplicity == "bh"
