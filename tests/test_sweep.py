"""`repaudit sweep` on a tiny model and real ARC-Easy docs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repaudit.audit.sweep import parse_values, sweep
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.run.runner import RunConfig, run


def _base(tiny_model, shared_data, tmp_path, **kw):
    return RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=10, batch_size=4,
                     cache_dir=tmp_path / "cache", **kw)


def test_float32_batch_size_sweep_is_within_the_noise_floor(tiny_model, shared_data, tmp_path):
    res = sweep(_base(tiny_model, shared_data, tmp_path), "batch_size", [1, 10], run)
    assert res.noise_floor_method.startswith("spread across a repeated uncached run")
    assert res.noise_floor_sd == 0.0  # float32 on CPU is deterministic
    for p in res.points:
        # 10 docs: the deltas are measured, a verdict is not given (compare's floor of 20 docs)
        assert p.flip_rate == 0.0 and p.delta == 0.0 and p.verdict == "no verdict: 10 docs (fewer than 20)"
    assert len({p.fingerprint_digest for p in res.points}) == 2  # batch size is recorded
    # how the intervals were made: sweep's defaults, each value judged alone (no adjustment), no flips classified
    assert res.stat_settings.model_dump() == {"alpha": 0.05, "adjust": "none", "n_boot": 10_000, "boot_seed": 0,
                                              "tie_eps": None}


def test_fewshot_base_uses_seed_spread(tiny_model, shared_data, tmp_path):
    res = sweep(_base(tiny_model, shared_data, tmp_path, num_fewshot=1), "prompt_format", ["lettered"], run,
                noise_seeds=2)
    assert res.noise_floor_method == "spread across 3 few-shot seeds" and len(res.noise_floor_scores) == 3
    p = res.points[0]
    assert p.ci_low <= p.delta <= p.ci_high


def test_unknown_factor_and_bad_values():
    with pytest.raises(RepauditError, match="unknown factor 'colour'"):
        parse_values("colour", "1,2")
    with pytest.raises(RepauditError, match="do not parse as values of batch_size"):
        parse_values("batch_size", "1,two")


def test_cli_sweep(tiny_model, shared_data, tmp_path):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(app, ["sweep", "--factor", "padding_side", "--values", "left", "--model", str(tiny_model),
                                   "--data-dir", str(shared_data), "--limit", "6", "--cache-dir", str(tmp_path / "c"),
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["factor"] == "padding_side" and data["points"][0]["value"] == "left"
    bad = CliRunner().invoke(app, ["sweep", "--factor", "colour", "--values", "1", "--model", str(tiny_model)])
    assert bad.exit_code == 2 and "unknown factor 'colour'" in bad.stderr  # a bad --factor: usage


def test_fewshot_order_permutes_the_same_examples_and_is_recorded(tiny_model, shared_data, tmp_path):
    from repaudit.run.runner import RunConfig, run

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=5, num_fewshot=3,
                  cache_dir=tmp_path / "c")
    a = run(RunConfig(**common))
    b = run(RunConfig(**common, fewshot_order_seed=7))
    assert b.fingerprint.settings.fewshot.fewshot_order_seed == 7
    assert a.fingerprint.settings.fewshot.fewshot_order_seed is None
    assert all(sorted(x.fewshot_ids) == sorted(y.fewshot_ids) for x, y in zip(a.docs, b.docs))
    assert any(x.fewshot_ids != y.fewshot_ids for x, y in zip(a.docs, b.docs))
    assert a.fingerprint.fewshot.ids_sha256 != b.fingerprint.fewshot.ids_sha256


def test_cli_sweep_fewshot_order_markdown_latex_and_plot(tiny_model, shared_data, tmp_path):
    base = ["sweep", "--factor", "fewshot_order", "--values", "1,2", "--model", str(tiny_model), "--data-dir",
            str(shared_data), "--limit", "5", "--num-fewshot", "2", "--noise-seeds", "1", "--cache-dir",
            str(tmp_path / "c")]
    res = CliRunner().invoke(app, base + ["-o", str(tmp_path / "s.md"), "--plot", str(tmp_path / "sw")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "s.md").read_text()
    assert "| 1 |" in md and "(base)" in md and "Noise floor" in md and "few-shot seeds" in md
    assert (tmp_path / "sw.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "sw.pdf").read_bytes()[:4] == b"%PDF"
    res = CliRunner().invoke(app, base + ["--format", "latex"])
    assert res.exit_code == 0 and r"\begin{tabular}" in res.stdout and r"\bottomrule" in res.stdout
