"""Tables a user reads in an 80-column terminal (the default in terminals and CI logs) and in a wide one: compare's
score table keeps its header and its verdicts beside their metric, and a ``--dry-run`` plan never cuts a
configuration's name."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from repaudit.audit.plan import ConfigCost, DryRun
from repaudit.cli import app
from repaudit.cli.common import Format, emit_dry_run

runner = CliRunner()


def _scores(out: str) -> list[str]:
    """The score table's lines: from its header to the first line that is not part of it."""
    lines = out.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("metric"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("What each paired row"))
    return lines[start:end]


@pytest.mark.parametrize("width", [80, 200])
def test_compare_scores_fit_the_terminal_with_their_header_and_verdicts(lmeval_runs, width):
    a, b = (str(lmeval_runs / s / "models__SmolLM2-135M-Instruct") for s in ("s1", "s3"))
    res = runner.invoke(app, ["compare", a, b, "--n-boot", "200"], env={"COLUMNS": str(width)},
                        terminal_width=width)
    assert res.exit_code == 0, res.output
    table = _scores(res.stdout)
    assert table[0].split()[0] == "metric" and "verdict" in table[0]
    assert max(len(s) for s in table) <= width
    # each metric's line carries its own numbers and verdict: no metric name alone above its numbers
    for metric in ("acc", "acc_norm"):
        row = next(s for s in table if s.split()[:1] == [metric])
        assert re.search(r"pts↑ +\d+\.\d\d +\d+\.\d\d +[−+]\d+\.\d\d .*noise", row), row
    if width == 200:
        assert len(table) == 4  # header, the task, one line per metric
        assert "[−2.36, +0.29]" in table[2] and "MDE" in table[0]
    else:  # stacked: the interval, p, flips and MDE on the line under each metric, under their own header
        assert "95% CI" in table[1] and "MDE" in table[1]
        assert table[table.index(next(s for s in table if s.split()[:1] == ["acc"])) + 1].strip().startswith(
            "[−2.36, +0.29]")


def _plan(n: int) -> DryRun:
    configs = [ConfigCost(label=f"prompt_format=lettered, num_fewshot={k}, fewshot_seed={k % 3}", docs=570,
                          requests=2280, batches=285, batches_stored=0, tokens_to_compute=912_345, estimate_s=95.0)
               for k in range(n)]
    return DryRun(command="attribute", configurations=configs, tokens_per_s=1000.0,
                  throughput_source="measured now")


@pytest.mark.parametrize("width", [80, 200])
def test_a_dry_run_plan_names_every_configuration_in_full(width, monkeypatch):
    import repaudit.cli.common as common

    plan = _plan(40)
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    monkeypatch.setattr(common, "out", console)
    emit_dry_run(plan, Format.rich, None)
    lines = console.file.getvalue().splitlines()
    labels = [c.label for c in plan.configurations]
    assert len(set(labels)) == 40 and all(any(s.startswith(label) for s in lines) for label in labels)
    table = [s for s in lines if not s.startswith("40 configurations")]
    assert max(len(s) for s in table) <= width
    assert table[0] == "dry run · attribute" and table[1].startswith("configuration")
    assert "tokens to compute" in "\n".join(table[1:3])
    if width == 200:  # one line per configuration: its name and its numbers
        assert any(s.startswith(labels[-1]) and s.endswith("95 s") for s in lines)
    else:  # the name on its own line, its numbers on the next
        k = lines.index(labels[-1])
        assert lines[k + 1].split() == ["570", "2,280", "285", "0", "912,345", "95", "s"]


def test_gate_refuses_latex_and_csv_listing_the_formats_it_writes(lmeval_runs):
    a, b = (str(lmeval_runs / s / "models__SmolLM2-135M-Instruct") for s in ("s1", "s3"))
    for fmt in ("latex", "csv"):  # --format offers only what gate writes
        res = runner.invoke(app, ["gate", a, b, "--max-drop", "1", "--format", fmt])
        assert res.exit_code == 64, res.output
        assert "choose one of" in res.stderr and "rich, markdown, json, html" in res.stderr, res.stderr
    for suffix in (".tex", ".csv"):  # and -o with a suffix of a format it does not write says what it writes
        res = runner.invoke(app, ["gate", a, b, "--max-drop", "1", "-o", f"gate{suffix}"])
        assert res.exit_code == 64, res.output
        assert res.stderr.rstrip().endswith("this command's report is rich, markdown, json or html"), res.stderr
        assert "latex" not in res.stderr.split(";")[-1]


@pytest.mark.parametrize("width", [80, 100, 200])
def test_a_variance_series_never_cuts_a_number_or_a_task_name(width):
    """Issue 63: at 80 and 100 columns the table read '42.…' and 'wino_…'. Every row's task, metric and numbers
    appear whole (the JSON's, formatted as the table formats them), as a table where it fits, else one line per row."""
    from pathlib import Path

    from repaudit.report.series import rows

    files = sorted(str(p) for p in (Path(__file__).parent / "fixtures" / "pythia" / "160m").glob("*.json"))
    args = ["variance", *files, "--across", "checkpoint", "--task", "winogrande,lambada*,piqa", "--n-boot", "200"]
    res = runner.invoke(app, args, env={"COLUMNS": str(width)}, terminal_width=width)
    assert res.exit_code == 0, res.output
    from repaudit.audit.series import SeriesReport

    report = SeriesReport.model_validate_json(runner.invoke(app, [*args, "--json"]).stdout)
    text = res.stdout
    assert "…" not in text.split("Confounders")[0]
    for row in rows(report):
        line = next(x for x in text.splitlines() if x.startswith(("│", row[0])) and row[1] in x
                    and f" {row[2]} " in x)
        for cell in row:
            assert cell in line, (cell, line)
