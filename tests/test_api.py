"""The Python API and CSV tables: the same objects as the CLI's reports, as DataFrames and CSV files."""

from __future__ import annotations

import io
import json
import runpy
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from repaudit import api
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.report.frames import to_csv

FIX = Path(__file__).resolve().parent / "fixtures"
LIGHT = FIX / "lighteval"


def test_frames_are_views_of_the_comparison_the_cli_writes(tmp_path):
    a, b = api.load(LIGHT / "arc_easy_0shot"), api.load(LIGHT / "arc_easy_3shot")
    c = api.compare(a, b, n_boot=500)
    scores = api.scores(c)
    assert len(scores) == len(c.scores) and scores.loc[0, "delta"] == pytest.approx(c.scores[0].delta)
    docs = api.paired_docs(a, b)
    assert len(docs) == c.scores[0].n_paired == 40  # the 0-shot run's 40 docs are all among the 3-shot run's 100
    flips = c.scores[0].flip_ids
    assert int(docs.flipped.sum()) == sum(len(v) for v in flips.values()) == len(api.flips(c))
    assert set(docs[docs.delta < 0].doc_id) == {f.doc_id for f in c.flips if f.direction == "right_to_wrong"}
    assert len(api.docs(b)) == 100 and "metric:acc" in api.docs(b).columns
    differs = api.factors(c).query("status == 'differs'")
    assert "num_fewshot" in set(differs.factor)
    # the CLI's CSV is the same table
    res = CliRunner().invoke(app, ["compare", str(LIGHT / "arc_easy_0shot"), str(LIGHT / "arc_easy_3shot"), "--n-boot",
                                   "500", "-o", str(tmp_path / "s.csv"), "--docs-csv", str(tmp_path / "d.csv")])
    assert res.exit_code == 0, res.output
    back = pd.read_csv(tmp_path / "s.csv")
    assert list(back.columns) == list(scores.columns) and back.loc[0, "delta"] == pytest.approx(scores.loc[0, "delta"])
    assert json.loads(back.loc[0, "flip_ids"]) == flips
    assert pd.read_csv(tmp_path / "d.csv").shape == docs.shape


def test_csv_cells_from_files_cannot_become_formulas():
    frame = pd.DataFrame({"target": ["=HYPERLINK(\"http://x\")", "+1+1", "@SUM(A1)", "-0.5", "plain", None],
                          "delta": [1.0, -2.0, 0.0, 0.5, 0.0, 1.0]})
    back = pd.read_csv(io.StringIO(to_csv(frame)), keep_default_na=False)
    assert list(back.target) == ["'=HYPERLINK(\"http://x\")", "'+1+1", "'@SUM(A1)", "-0.5", "plain", ""]
    assert list(back.delta) == [1.0, -2.0, 0.0, 0.5, 0.0, 1.0]


def test_csv_is_refused_where_a_command_has_no_table_for_it_before_any_work(tmp_path):
    res = CliRunner().invoke(app, ["sweep", "--task", "arc_easy", "--factor", "batch_size", "--values", "1", "-o",
                                   str(tmp_path / "s.csv")])
    assert res.exit_code == 2 and res.output.startswith("error: CSV is written by compare")
    res = CliRunner().invoke(app, ["compare", str(LIGHT / "arc_easy_0shot"), str(LIGHT / "arc_easy_3shot"),
                                   "--docs-csv", str(tmp_path / "d.txt")])
    assert res.exit_code == 2 and "must end in .csv" in res.output
    assert not list(tmp_path.iterdir())


def test_api_errors_are_the_cli_error_lines(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": 3}')
    with pytest.raises(RepauditError, match="bad.json"):
        api.load(bad)


def test_attribute_from_python_gives_points_that_sum_to_the_delta(tiny_model, shared_data, tmp_path):
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=6, cache_dir=tmp_path / "c")
    write_record(run(RunConfig(**common)), tmp_path / "a.json")
    write_record(run(RunConfig(**common, prompt_format="lettered")), tmp_path / "b.json")
    rep = api.attribute(tmp_path / "a.json", tmp_path / "b.json", data_dir=shared_data, model=str(tiny_model),
                        cache_dir=tmp_path / "c", n_boot=100)
    frame = api.attribution(rep)
    assert list(frame.factor) == [*rep.factors, "residual"]
    assert frame.shapley_pts.sum() == pytest.approx(100 * (rep.reexecuted_delta + rep.residual), abs=1e-9)


def test_the_api_tour_example_runs(capsys):
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "api_tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "40 shared docs, 7 flipped" in out and "num_fewshot" in out
