"""The HTML report: one self-contained page, its data and its safety, and the per-doc browser in a real
headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by Selenium; skipped where absent)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.report.html import unpack

runner = CliRunner()
ARTEFACTS = Path(os.environ.get("REPAUDIT_TEST_ARTEFACTS", Path(__file__).resolve().parents[1] / "artefacts"))
INJECT_PROMPT = "<script>document.title='PWNED'</script><!-- \u2028 </script>"
INJECT_CHOICE = " <img src=x onerror=\"document.title='PWNED'\">"


def _html(args: list[str]) -> str:
    res = runner.invoke(app, ["compare", *args, "--n-boot", "500"])
    assert res.exit_code == 0, res.output
    out = Path(args[args.index("-o") + 1])
    return out.read_text(encoding="utf-8")


def _data(page: str) -> dict:
    m = re.search(r'<script type="application/octet-stream" id="docdata">([A-Za-z0-9+/=\s]+)</script>', page)
    assert m, "no data block"
    return unpack(m.group(1))


def _injected_copy(lmeval_runs: Path, tmp_path: Path) -> Path:
    """lm-eval's s1 output with doc 0's prompt and first choice replaced by markup and a script."""
    src = lmeval_runs / "s1" / "models__SmolLM2-135M-Instruct"
    dst = tmp_path / "evil" / src.name
    shutil.copytree(src, dst)
    samples = next(dst.glob("samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    for i, req in enumerate(first["arguments"].values()):
        req["arg_0"] = INJECT_PROMPT + req["arg_0"]
        if i == 0:
            req["arg_1"] = INJECT_CHOICE
    lines[0] = json.dumps(first)
    samples.write_text("\n".join(lines) + "\n")
    return dst.parent


def test_lmeval_pair_is_one_self_contained_page_with_every_shared_doc(lmeval_runs, tmp_path):
    out = tmp_path / "r.html"
    page = _html([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "-o", str(out)])
    # no network: nothing is loaded from elsewhere, and the policy forbids it
    assert not re.search(r'(src|href)="(https?:)?//', page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1).replace("&#39;", "'")
    assert "default-src 'none'" in csp
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp  # exactly the browser's script may run
    data = _data(page)
    res = runner.invoke(app, ["compare", str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--json",
                              "--n-boot", "500"])
    c = json.loads(res.stdout)
    assert len(data["docs"]) == 570 and data["tasks"] == ["arc_easy"] and data["metrics"] == [["acc", "acc_norm"]]
    for k, metric in enumerate(data["metrics"][0]):  # each metric's outcomes: its own flips, predictions, margins
        flips = {f["doc_id"]: f for f in c["flips"] if f["metric"] == metric}
        assert sorted(d["i"] for d in data["docs"] if d["o"][k][2]) == sorted(flips) and flips
        for d in (d for d in data["docs"] if d["i"] in flips):
            f = flips[d["i"]]
            assert d["o"][k][5:] == [str(f["a_prediction"]), str(f["b_prediction"])]
            assert d["o"][k][3:5] == [round(f["a_margin"], 4), round(f["b_margin"], 4)]
    doc0 = next(d for d in data["docs"] if d["i"] == 0)
    assert doc0["ch"] == [" cellular telephone", " television", " refrigerator", " airplane"]
    assert doc0["pa"][1].endswith("Question: Which technology was developed most recently?\nAnswer:")
    assert "pb" not in doc0 and len(doc0["la"]) == 4  # B's prompt is A's
    assert "<svg" in page and "Δ = B − A (pts)" in page  # the forest plot, inline


def test_file_strings_are_escaped_and_data_cannot_close_its_block(lmeval_runs, tmp_path):
    evil = _injected_copy(lmeval_runs, tmp_path)
    out = tmp_path / "evil.html"
    page = _html([str(evil), str(lmeval_runs / "s3"), "-o", str(out)])
    assert "PWNED" not in page  # only inside the compressed data block
    doc0 = next(d for d in _data(page)["docs"] if d["i"] == 0)
    assert doc0["pa"][1].startswith(INJECT_PROMPT) and doc0["ch"][0] == INJECT_CHOICE
    assert doc0["sp"] is True  # the samples file's own prompt_hash is kept: the badge follows the file


def test_no_doc_text_leaves_the_benchmark_out(lmeval_runs, tmp_path):
    out = tmp_path / "r.html"
    page = _html([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "-o", str(out), "--no-doc-text"])
    docs = _data(page)["docs"]
    assert len(docs) == 570 and not any(k in d for d in docs for k in ("pa", "pb", "ch", "ga", "gb"))
    assert "cellular telephone" not in json.dumps(docs) and "--no-doc-text" in page


def test_html_is_refused_where_a_command_has_none(tmp_path):
    for args in (["sweep", "--factor", "dtype", "--values", "float32", "--dry-run"],
                 ["compare", "a.json", "b.json", "--attribute"]):
        res = runner.invoke(app, [*args, "-o", str(tmp_path / "s.html")])
        assert res.exit_code == 2 and "HTML is written by compare, gate" in res.stderr, args
        assert not (tmp_path / "s.html").exists()


def test_gate_html_has_the_decision_the_comparison_and_the_docs(lmeval_runs, tmp_path):
    out = tmp_path / "gate.html"
    res = runner.invoke(app, ["gate", str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--max-drop", "3",
                              "--n-boot", "500", "-o", str(out)])
    js = runner.invoke(app, ["gate", str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--max-drop", "3",
                             "--n-boot", "500", "--json"])
    g = json.loads(js.stdout)
    assert res.exit_code == js.exit_code == {"GO": 0, "NO-GO": 1, "INCONCLUSIVE": 2}[g["decision"]]
    page = out.read_text()
    assert f"<title>repaudit gate: {g['decision']}</title>" in page and "Gate: " in page
    assert page.count("<td class=\"better\">PASS</td>") == sum(r["decision"] == "PASS" for r in g["rows"])
    assert 'id="factors"' in page and 'id="scores"' in page and "<svg" in page
    assert len(_data(page)["docs"]) == 570


@pytest.fixture(scope="module")
def tiny_reports(tiny_model, shared_data, tmp_path_factory):
    """HTML of attribute (two tiny-model runs that differ in prompt format), sweep and variance."""
    d = tmp_path_factory.mktemp("tiny-html")
    where = ["--model", str(tiny_model), "--data-dir", str(shared_data), "--cache-dir", str(d / "c")]
    common = ["--task", "arc_easy", *where, "--scoring-strategy", "shared_prefix"]
    for name, extra in (("a", []), ("b", ["--prompt-format", "lettered"])):
        res = runner.invoke(app, ["run", *common, "--limit", "20", *extra, "-o", str(d / f"{name}.json")])
        assert res.exit_code == 0, res.output
    cmds = {"attribute": ["attribute", str(d / "a.json"), str(d / "b.json"), *where, "--n-boot", "300"],
            "sweep": ["sweep", "--factor", "prompt_format", "--values", "lettered", *common, "--limit", "20",
                      ],
            "variance": ["variance", *where, "--doc-ids", "0,3,5,8,13,21", "--fewshot-seeds", "2", "--formats",
                         "cloze", "--num-fewshot", "1"]}
    pages = {}
    for name, args in cmds.items():
        res = runner.invoke(app, [*args, "-o", str(d / f"{name}.html")])
        assert res.exit_code == 0, res.output
        js = runner.invoke(app, [*args, "--json"])
        assert js.exit_code == 0, js.output
        pages[name] = (d / f"{name}.html", json.loads(js.stdout))
    return pages


def test_attribute_sweep_variance_html(tiny_reports):
    path, att = tiny_reports["attribute"]
    page = path.read_text()
    for factor, value in zip(att["factors"], att["phi"]):
        shown = f"{100 * value:+.2f}".replace("-", "−")  # compare's minus sign
        assert f"<td>{factor}</td><td class=\"num\">{shown}</td>" in page
    assert "<svg" in page and len(_data(page)["docs"]) == 20  # waterfall and the recorded runs' docs
    path, sw = tiny_reports["sweep"]
    page = path.read_text()
    assert f"{100 * sw['points'][0]['score']:.2f}" in page and "noise floor" in page and "<svg" in page
    assert 'id="docdata"' not in page
    path, var = tiny_reports["variance"]
    page = path.read_text()
    assert "Benchmark noise of arc_easy" in page and "<svg" in page and f"{var['n_docs']} docs" in page


def test_browser_attribute_sweep_variance_pages(chrome, tiny_reports):
    for name, (path, _) in tiny_reports.items():
        By = _open(chrome, path)
        assert chrome.find_element(By.ID, "headline").text, name
        assert chrome.find_elements(By.CSS_SELECTOR, "div.figure svg"), name
        if name == "attribute":
            assert len(chrome.find_elements(By.CSS_SELECTOR, "#doc-rows tr.doc")) == 20
        assert not _console_errors(chrome), name


# --- in a real browser -------------------------------------------------------------------------------------


def _open(d, path: Path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d.get(path.resolve().as_uri())
    WebDriverWait(d, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") != "0")
    assert d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1"
    return By


def _console_errors(d) -> list:
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def _select(d, By, id_: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(d.find_element(By.ID, id_)).select_by_value(value)


def test_browser_lmeval_pair_headline_flips_filter_and_doc(chrome, lmeval_runs, tmp_path):
    out = tmp_path / "float32-vs-bfloat16.html"
    page = _html([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "-o", str(out)])
    data = _data(page)
    By = _open(chrome, out)
    res = runner.invoke(app, ["compare", str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "--json",
                              "--n-boot", "500"])
    c = json.loads(res.stdout)
    head = chrome.find_element(By.ID, "headline").text
    assert head.startswith("Verdict:") and f"{c['summary']['rows']} task×metric rows" in head
    # the flips of the selected metric: acc's first (outcome 0 of each doc)
    n_flips = sum(1 for d in data["docs"] if d["o"][0][2])
    assert int(chrome.find_element(By.ID, "flip-count").text) == n_flips
    assert len(chrome.find_elements(By.CSS_SELECTOR, "#doc-rows tr.doc")) == 100  # first page of 570
    _select(chrome, By, "f-view", "flips")
    rows = chrome.find_elements(By.CSS_SELECTOR, "#doc-rows tr.doc")
    assert len(rows) == n_flips == int(chrome.find_element(By.ID, "doc-count").text)
    _select(chrome, By, "f-view", "harmful")
    harmful = sum(1 for d in data["docs"] if d["o"][0][2] == "h")
    assert len(chrome.find_elements(By.CSS_SELECTOR, "#doc-rows tr.doc")) == harmful
    _select(chrome, By, "f-view", "all")
    box = chrome.find_element(By.ID, "f-search")
    box.send_keys("developed most recently")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(chrome, 5).until(lambda d: d.find_element(By.ID, "doc-count").text == "1")
    chrome.find_element(By.CSS_SELECTOR, "#doc-rows tr.doc").click()
    detail = chrome.find_element(By.CSS_SELECTOR, "tr.detail").text
    assert "cellular telephone" in detail and "✓ target" in detail and "Prompt (the same in A and B)" in detail
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    chrome.save_screenshot(str(ARTEFACTS / "html_lmeval_doc.png"))
    assert not _console_errors(chrome)


def test_browser_runs_no_injected_script(chrome, lmeval_runs, tmp_path):
    evil = _injected_copy(lmeval_runs, tmp_path)
    out = tmp_path / "evil.html"
    _html([str(evil), str(lmeval_runs / "s3"), "-o", str(out)])
    By = _open(chrome, out)
    title = chrome.title
    chrome.find_element(By.ID, "f-search").send_keys("PWNED")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(chrome, 5).until(lambda d: d.find_element(By.ID, "doc-count").text == "1")
    chrome.find_element(By.CSS_SELECTOR, "#doc-rows tr.doc").click()
    detail = chrome.find_element(By.CSS_SELECTOR, "tr.detail")
    assert "<script>document.title='PWNED'</script>" in detail.text  # shown literally
    assert "<img src=x onerror=" in detail.text
    assert not detail.find_elements(By.TAG_NAME, "img") and not detail.find_elements(By.TAG_NAME, "script")
    assert chrome.title == title and "PWNED" not in chrome.title
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        chrome.switch_to.alert.text  # noqa: B018
    assert not _console_errors(chrome)


def test_browser_repaudit_runs_rebuild_and_diff_prompts(chrome, tiny_model, shared_data, tmp_path):
    """Two repaudit runs that differ in prompt format: prompts are rebuilt from fingerprint and data, checked
    against the recorded prompt_hash, and shown diffed."""
    common = ["run", "--task", "arc_easy", "--model", str(tiny_model), "--data-dir", str(shared_data),
              "--limit", "20", "--scoring-strategy", "shared_prefix"]
    for name, extra in (("a", []), ("b", ["--prompt-format", "lettered"])):
        res = runner.invoke(app, [*common, *extra, "-o", str(tmp_path / f"{name}.json")])
        assert res.exit_code == 0, res.output
    out = tmp_path / "prompt-format.html"
    page = _html([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(out), "--data-dir",
                  str(shared_data)])
    assert "Prompts of A rebuilt" in page and "20 shown" in page
    data = _data(page)
    assert all("pa" in d and "pb" in d and d["sp"] is False for d in data["docs"])
    By = _open(chrome, out)
    _select(chrome, By, "f-view", "all")
    chrome.find_element(By.ID, "f-changed").click()
    assert len(chrome.find_elements(By.CSS_SELECTOR, "#doc-rows tr.doc")) == 20
    chrome.find_element(By.CSS_SELECTOR, "#doc-rows tr.doc").click()
    detail = chrome.find_element(By.CSS_SELECTOR, "tr.detail")
    assert "Prompt A (differences marked)" in detail.text and "Prompt B (differences marked)" in detail.text
    assert detail.find_elements(By.TAG_NAME, "mark")  # the differing words
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    chrome.save_screenshot(str(ARTEFACTS / "html_prompt_diff.png"))
    assert not _console_errors(chrome)


def _cells(d) -> dict[int, list[str]]:
    """The shown rows of the doc table, by doc id: every cell's text."""
    rows = d.execute_script("return [...document.querySelectorAll('#doc-rows tr.doc')]"
                            ".map((tr) => [...tr.cells].map((td) => td.textContent));")
    return {int(r[1]): r for r in rows}


def _expect_row(row: list[str], o: list) -> None:
    """One shown row against the payload's outcome ``[a, b, f, ma, mb, ra, rb]`` of the selected metric."""
    a, b, f, ma, mb = o[:5]
    assert row[3:6] == [f"{a:g}", f"{b:g}", {"h": "harmful", "b": "beneficial", "c": "churn", "": ""}[f]], row
    for cell, m in ((row[6], ma), (row[7], mb)):
        assert cell == "—" if m is None else float(cell) == pytest.approx(m, abs=6e-4), row


def test_browser_metric_selector_switches_every_column(chrome, lmeval_runs, tmp_path):
    """s1 vs s3 (float32 vs bfloat16): acc and acc_norm flip on different docs. Switching the metric selector from
    acc to acc_norm changes the A/B values, the flip class, the margins, the flip count, the flips view and the
    detail's predictions to acc_norm's own."""
    out = tmp_path / "metrics.html"
    data = _data(_html([str(lmeval_runs / "s1"), str(lmeval_runs / "s3"), "-o", str(out)]))
    names = data["metrics"][0]
    assert names == ["acc", "acc_norm"]
    By = _open(chrome, out)
    from selenium.webdriver.support.ui import Select

    select = Select(chrome.find_element(By.ID, "f-metric"))
    assert [o.get_attribute("value") for o in select.options] == names
    assert select.first_selected_option.get_attribute("value") == "acc"
    by_id = {d["i"]: d for d in data["docs"]}
    shown = {}
    for k, metric in enumerate(names):
        _select(chrome, By, "f-metric", metric)
        _select(chrome, By, "f-view", "all")
        shown[metric] = _cells(chrome)
        assert len(shown[metric]) == 100  # the first page, every column the metric's own
        for i, row in shown[metric].items():
            _expect_row(row, by_id[i]["o"][k])
        flipped = sorted(d["i"] for d in data["docs"] if d["o"][k][2])
        assert int(chrome.find_element(By.ID, "flip-count").text) == len(flipped)
        _select(chrome, By, "f-view", "flips")
        assert sorted(_cells(chrome)) == flipped
    # the A/B columns moved: on some docs acc and acc_norm disagree, and the page shows each one's values
    moved = [i for i in shown["acc"] if shown["acc"][i][3:5] != shown["acc_norm"][i][3:5]]
    assert moved and all(by_id[i]["o"][0][:2] != by_id[i]["o"][1][:2] for i in moved)
    # a doc where only acc_norm flipped: a flip under acc_norm, none under acc; the detail names acc_norm's answers
    only_norm = next(d for d in data["docs"] if d["i"] < 100 and d["o"][1][2] and not d["o"][0][2])  # first page
    _select(chrome, By, "f-view", "all")
    for metric, k in (("acc", 0), ("acc_norm", 1)):
        _select(chrome, By, "f-metric", metric)
        _expect_row(_cells(chrome)[only_norm["i"]], only_norm["o"][k])
        chrome.execute_script(f"[...document.querySelectorAll('#doc-rows tr.doc')].find((tr) => "
                              f"tr.cells[1].textContent === '{only_norm['i']}').click();")
        detail = chrome.find_element(By.CSS_SELECTOR, "tr.detail").text
        a, b, _, _, _, ra, rb = only_norm["o"][k]
        assert f"{metric}: A {a:g}, B {b:g}" in detail and f"prediction by {metric} A: {ra} · B: {rb}" in detail
        assert f"picked by {metric}" in detail
        chrome.execute_script("document.querySelector('tr.detail').remove();")
    assert not _console_errors(chrome)
