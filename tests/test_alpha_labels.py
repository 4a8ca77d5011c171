"""``--alpha 0.1``: every command that prints an interval, in every format it writes, labels it 90 % (80 % for gate's
two one-sided tests at α) and nowhere 95 %.

A "95" is a label when it stands as a number of its own (``95 %``, ``95% CI``, ``95\\,\\%``, ``0.95``, ``ci95``), not
when it is part of a longer number or a hash (``0.952``, ``12.95``, ``b95f``). HTML is read as its text nodes
outside scripts (a plot's labels are SVG text; the compressed doc data is not read), JSON as its keys and the
strings that describe an interval. ``run`` and ``factors`` print no interval; ``export`` is checked on its
records' interval fields (its per-doc sidecars are data).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app

FIX = Path(__file__).parent / "fixtures"
PAIR = [str(FIX / "lmeval_config" / "openbookqa_0shot"), str(FIX / "lmeval_config" / "openbookqa_3shot")]
SEEDS = [str(p) for p in sorted((FIX / "repaudit_runs" / "fewshot_seeds").glob("*.json"))]
LABEL = re.compile(r"ci95|(?<![0-9A-Za-z.])(?:0\.)?95(?![0-9A-Za-z]|\.[0-9])")
TEXT = (".txt", ".md", ".tex")


def _labels(path: Path) -> list[str]:
    """The 95-labels in a report file (see the module docstring)."""
    text = path.read_text(errors="replace")
    if path.suffix == ".html":
        text = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S)
        text = " ".join(re.findall(r">([^<]*)<", text))
    elif path.suffix == ".json":
        found: list[str] = []

        def walk(x) -> None:
            if isinstance(x, dict):
                for k, v in x.items():
                    found.append(k)
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
            elif isinstance(x, str) and re.search(r"interval|CI|%|confidence", x):
                found.append(x)

        walk(json.loads(text))
        text = "\n".join(found)
    return [text[max(0, m.start() - 40): m.end() + 20] for m in LABEL.finditer(text)]


def _invoke(args: list[str]) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code in (0, 1, 2) if args[0] == "gate" else res.exit_code == 0, res.output


def _check(paths: list[Path], level: str = "90") -> None:
    for p in paths:
        assert p.exists(), p
        assert _labels(p) == [], (p.name, _labels(p))
        if p.suffix == ".json":  # every JSON report records how its intervals were made
            assert json.loads(p.read_text())["stat_settings"]["alpha"] == 0.1, p.name
    said = "".join(p.read_text(errors="replace") for p in paths if p.suffix in TEXT)
    assert re.search(rf"(?<![0-9.]){level}(?:\s?%|\\,\\%)", said), f"no {level} % label in {[p.name for p in paths]}"


def test_compare(tmp_path):
    paths = [tmp_path / f"c{s}" for s in (*TEXT, ".json", ".csv", ".html")]
    for p in paths:
        _invoke(["compare", *PAIR, "--alpha", "0.1", "-o", str(p)])
    _check(paths)


def test_gate(tmp_path):
    paths = [tmp_path / f"g{s}" for s in (".txt", ".md", ".json", ".html")]
    for p in paths:
        _invoke(["gate", *PAIR, "--max-drop", "5", "--alpha", "0.1", "-o", str(p), "--junit", str(tmp_path / "j.xml")])
    assert LABEL.findall((tmp_path / "j.xml").read_text()) == []
    _check(paths, "80")


# five checkpoints of the 27 (every sixth) give every interval label, six reports each
CHECKPOINTS = sorted(str(p) for p in (FIX / "pythia" / "160m").glob("*"))[::6]


@pytest.mark.parametrize("across,files", [("seed", SEEDS), ("checkpoint", CHECKPOINTS)])
def test_variance_across(tmp_path, across, files):
    paths = [tmp_path / f"v{s}" for s in (*TEXT, ".json", ".csv", ".html")]
    for p in paths:
        _invoke(["variance", *files, "--across", across, "--alpha", "0.1", "--n-boot", "200", "-o", str(p)])
    for p in paths:
        assert _labels(p) == [], (p.name, _labels(p))
    assert json.loads(paths[3].read_text())["stat_settings"] == {"alpha": 0.1, "adjust": "none", "n_boot": 200,
                                                                 "boot_seed": 0, "tie_eps": None}
    if across == "seed":
        _check(paths)


@pytest.fixture(scope="module")
def tiny_runs(tiny_model, shared_data, tmp_path_factory):
    """Two 24-doc runs of the tiny model that differ in the prompt format (a replayable factor)."""
    d = tmp_path_factory.mktemp("alpha")
    common = ["--task", "arc_easy", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "24",
              "--cache-dir", str(d / "cache")]
    _invoke(["run", *common, "-o", str(d / "a.json")])
    _invoke(["run", *common, "--prompt-format", "lettered", "-o", str(d / "b.json")])
    return d, common


def test_attribute(tiny_runs, tmp_path):
    d, common = tiny_runs
    paths = [tmp_path / f"a{s}" for s in (*TEXT, ".json", ".csv", ".html")]
    for p in paths:
        _invoke(["attribute", str(d / "a.json"), str(d / "b.json"), "--model", common[3], "--data-dir", common[5],
                 "--cache-dir", common[-1], "--n-boot", "200", "--alpha", "0.1", "-o", str(p)])
    _check(paths)


def test_sweep_variance_and_reproduce(tiny_runs, tmp_path):
    _, common = tiny_runs
    runs = {
        "sweep": ["sweep", "--factor", "prompt_format", "--values", "lettered", *common, "--alpha", "0.1"],
        "variance": ["variance", *common, "--num-fewshot", "1", "--fewshot-seeds", "2", "--formats", "cloze",
                     "--n-boot", "200", "--alpha", "0.1"],
        "reproduce": ["reproduce", *common, "--target", "30", "--budget", "2", "--alpha", "0.1"],
    }
    for name, args in runs.items():
        suffixes = (*TEXT, ".json") + ((".html",) if name != "reproduce" else ())
        paths = [tmp_path / f"{name}{s}" for s in suffixes]
        for p in paths:
            _invoke([*args, "-o", str(p)])
        _check(paths)


def test_appendix(tmp_path):
    paths = [tmp_path / f"ap{s}" for s in (".tex", ".md")]
    for p in paths:
        _invoke(["appendix", *PAIR, "--compare", "1,2", "--alpha", "0.1", "-o", str(p)])
    _check(paths)


def test_export_records_the_interval_level(tmp_path):
    _invoke(["export", PAIR[0], "--model-id", "HuggingFaceTB/SmolLM2-135M-Instruct", "--evaluator-relationship",
             "third_party", "--organization", "repaudit tests", "--alpha", "0.1", "-o", str(tmp_path / "eee")])
    records = [json.loads(p.read_text()) for p in (tmp_path / "eee").rglob("*.json")]
    found = [r["score_details"].get("uncertainty", {}) for rec in records for r in rec["evaluation_results"]]
    intervals = [u["confidence_interval"] for u in found if "confidence_interval" in u]
    assert intervals and all(ci["confidence_level"] == 0.9 and "1.644854" in ci["method"] for ci in intervals)
