"""Statistics settings declared once (issue 62): every command's ``--alpha``, ``--adjust``, ``--n-boot``,
``--boot-seed`` and ``--tie-eps`` come from :class:`~repaudit.audit.stat_settings.StatSettings` — the same names, the
same values accepted, the same message for a value out of range on every command — and every report records the
record it was made with."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from repaudit.audit.stat_settings import COMMANDS, StatSettings, base_type, for_command, option_name, refusal
from repaudit.cli import app
from repaudit.errors import UsageError

FIX = Path(__file__).parent / "fixtures" / "lmeval_config"
PAIR = [str(FIX / "openbookqa_0shot"), str(FIX / "openbookqa_3shot")]
FIELDS = tuple(StatSettings.model_fields)
#: the least each command needs before it reads its statistics options (nothing is read: they are checked first)
MINIMAL = {"compare": ["compare", "a.json", "b.json"], "gate": ["gate", "a.json", "b.json", "--max-drop", "1"],
           "sweep": ["sweep", "--factor", "batch_size", "--values", "1"],
           "attribute": ["attribute", "a.json", "b.json"],
           "variance": ["variance"], "series": ["variance", "a.json", "b.json", "--across", "seed"],
           "appendix": ["appendix", "a.json"], "reproduce": ["reproduce", "--target", "30"],
           "export": ["export", "a.json", "-o", "out"]}
#: values out of every field's range, as typed on the command line
BAD = {"alpha": ["0", "0.5", "0.7", "-1", "nan", "inf"], "adjust": ["foo", "Holm"], "n_boot": ["99", "1000001", "0"],
       "boot_seed": ["-1", "4294967296"], "tie_eps": ["-0.5", "inf", "nan"]}


def _commands() -> dict:
    return typer.main.get_command(app).commands


def test_every_commands_statistics_options_are_the_records_fields():
    """Walk every command's options from the CLI: the statistics options are exactly the fields the command takes
    (:data:`COMMANDS`), each named, typed, defaulted and documented from the record; no command spells one
    another way (gate's old ``--multiplicity`` is a hidden alias only)."""
    seen = set()
    for name, cmd in _commands().items():
        params = {p.name: p for p in cmd.params}
        stat = [p for p in cmd.params if p.name in FIELDS]
        if not stat:
            assert name not in COMMANDS, name
            continue
        seen.add(name)
        spec = COMMANDS[name]
        assert tuple(p.name for p in stat) == spec.options, name
        for p in stat:
            assert p.opts == [option_name(p.name)] and not p.secondary_opts and not p.hidden, (name, p.opts)
            assert p.default == getattr(spec.defaults, p.name), (name, p.name, p.default)
            assert p.type_descriptor.annotation is base_type(p.name), (name, p.name)
            first = (StatSettings.model_fields[p.name].description or "").split(".")[0]
            assert " ".join(p.help.split()).startswith(" ".join(first.split())), (name, p.name)
        aliases = {k: v for k, v in params.items() if v.opts and v.opts[0] in ("--multiplicity", "--level",
                                                                               "--bootstrap", "--n-bootstrap")}
        assert set(aliases) == ({"multiplicity"} if name == "gate" else set()), (name, aliases)
        assert all(p.hidden for p in aliases.values())
    assert seen == set(COMMANDS) - {"series"}  # series is variance FILE… --across: variance's options


@pytest.mark.parametrize("command", sorted(MINIMAL))
def test_a_value_out_of_range_gets_one_message_on_every_command(command, tmp_path):
    """The same values refused with the same ``error:`` line (the record's own range, said once) on every command
    that takes the option: the usage exit code (gate: 64), nothing read, no traceback."""
    runner = CliRunner()
    argv = [tmp_path / a if a == "out" else a for a in MINIMAL[command]]
    for field in COMMANDS[command].options:
        for value in BAD[field]:
            res = runner.invoke(app, [*map(str, argv), option_name(field), value])
            typed = base_type(field)(float(value)) if base_type(field) is not str else value
            lines = [x for x in res.stderr.splitlines() if x.strip()]
            assert lines == [f"error: {refusal(field, typed)}"], (command, field, value, res.stderr)
            assert res.exit_code == (64 if command == "gate" else 2), (command, field, value)


def test_the_messages_say_the_one_range():
    assert refusal("alpha", 0.5) == "--alpha must be a number in (0, 0.5), got 0.5"
    assert refusal("n_boot", 99) == "--n-boot must be an integer between 100 and 1000000, got 99"
    assert refusal("adjust", "foo") == "--adjust must be one of holm, bh, none, got 'foo'"
    assert refusal("tie_eps", -0.5) == "--tie-eps must be a number ≥ 0, got -0.5"
    assert refusal("boot_seed", -1) == "--boot-seed must be an integer between 0 and 4294967295, got -1"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_same_values_are_accepted_by_every_command(command):
    """The edges of each range a command takes are accepted by it, through its own option group."""
    from repaudit.cli.groups import StatOptions

    edges = {"alpha": [1e-6, 0.4999], "adjust": ["holm", "bh", "none"], "n_boot": [100, 1_000_000],
             "boot_seed": [0, 2**32 - 1], "tie_eps": [0.0, 1e6]}
    for field in COMMANDS[command].options:
        for value in edges[field]:
            stat = StatOptions(command=command, **{field: value}).settings()
            assert getattr(stat, field) == value and stat == for_command(command, **{field: value})


def test_the_library_refuses_with_the_same_message():
    from repaudit import api

    with pytest.raises(UsageError, match=r"^--alpha must be a number in \(0, 0.5\), got 0.7$"):
        api.compare(*PAIR, alpha=0.7)
    with pytest.raises(UsageError, match="sweep takes no tie_eps"):
        for_command("sweep", tie_eps=0.1)
    with pytest.raises(UsageError, match=r"^--adjust must be one of holm, bh, none, got None$"):
        for_command("compare", adjust=None)


def test_a_gate_policy_takes_alpha_in_the_same_range(tmp_path):
    """A policy file's ``alpha`` is the record's type: 0.5 is refused there too, naming the file and the key."""
    policy = tmp_path / "p.yaml"
    policy.write_text("alpha: 0.5\nrows:\n  - {task: '*', test: non_inferiority, margin: 1}\n")
    res = CliRunner().invoke(app, ["gate", *PAIR, "--policy", str(policy)])
    assert res.exit_code == 65 and "alpha" in res.stderr and str(policy) in res.stderr.replace("\n", ""), res.stderr


def test_every_json_report_holds_its_stat_settings(tmp_path):
    """compare's and gate's JSON record the record their intervals were made with — the options given, the rest at
    the command's defaults; gate's old ``--multiplicity`` lands in ``adjust``; every report model has the field."""
    from repaudit.audit.attribution import AttributionReport
    from repaudit.audit.compare import Comparison
    from repaudit.audit.determinism import DeterminismReport
    from repaudit.audit.gate import GateResult
    from repaudit.audit.reproduce import ReproduceResult
    from repaudit.audit.series import SeriesReport
    from repaudit.audit.sweep import SweepResult
    from repaudit.audit.variance import VarianceReport

    for model in (Comparison, GateResult, SweepResult, AttributionReport, VarianceReport, SeriesReport,
                  ReproduceResult, DeterminismReport):
        assert "stat_settings" in model.model_fields, model
    runner = CliRunner()
    c = json.loads(runner.invoke(app, ["compare", *PAIR, "--json", "--n-boot", "300", "--boot-seed", "7",
                                       "--tie-eps", "0.2"]).stdout)
    assert c["stat_settings"] == {"alpha": 0.05, "adjust": "holm", "n_boot": 300, "boot_seed": 7, "tie_eps": 0.2}
    assert (c["alpha"], c["adjust"], c["tie_eps"]) == (0.05, "holm", 0.2)  # format 3's own keys agree
    g = json.loads(runner.invoke(app, ["gate", *PAIR, "--max-drop", "5", "--json", "--alpha", "0.1",
                                       "--multiplicity", "bh"]).stdout)
    want = {"alpha": 0.1, "adjust": "bh", "n_boot": 2000, "boot_seed": 0, "tie_eps": 0.01}
    assert g["stat_settings"] == want and g["comparison"]["stat_settings"] == want
    assert (g["policy"]["alpha"], g["policy"]["multiplicity"]) == (0.1, "bh")
    both = runner.invoke(app, ["gate", *PAIR, "--max-drop", "5", "--adjust", "bh", "--multiplicity", "none"])
    assert both.exit_code == 64 and "--multiplicity is the old name of --adjust" in both.stderr


def test_the_bootstrap_seed_reaches_every_resample():
    """``--boot-seed`` moves a bootstrap interval (the seed is used, not only recorded), and the same seed gives
    the same interval bit for bit: a score row of 60 docs in 6 clusters (a cluster bootstrap) built from its typed
    input."""
    import numpy as np

    from repaudit.audit.scores import RowInput, score_row
    from repaudit.importers.comparable import DocOutcome, TaskOutcome

    rng = np.random.default_rng(3)

    def run(x) -> TaskOutcome:
        docs = {i: DocOutcome(doc_id=i, doc_hash=f"h{i}", prompt_hash=None, target=None, cluster=f"s{i % 6}",
                              metrics={"acc": float(v)}, prediction=None) for i, v in enumerate(x)}
        return TaskOutcome(task="t", reported={"acc": (float(np.mean(x)), 0.05)}, docs=docs, n_docs=len(x))

    ta, tb = run(rng.integers(0, 2, 60)), run(rng.integers(0, 2, 60))
    rows = [score_row(RowInput("t", "acc", ta, tb, list(range(60))), for_command("compare", n_boot=300, boot_seed=s))
            .row for s in (0, 0, 1)]
    assert rows[0].method == "paired_cluster_bootstrap" and rows[0].n_clusters == 6
    assert (rows[0].ci_low, rows[0].ci_high) == (rows[1].ci_low, rows[1].ci_high)
    assert (rows[0].ci_low, rows[0].ci_high) != (rows[2].ci_low, rows[2].ci_high)
    assert math.isfinite(rows[2].ci_low) and rows[2].delta == rows[0].delta
