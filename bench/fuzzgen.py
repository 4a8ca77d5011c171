"""Seeded mutations of real run files, for the fuzz test (``tests/test_fuzz.py``) and bench (``bench/fuzz.py``).

Each case is a pair of inputs for ``repaudit compare`` derived from real files — a repaudit run
file, lm-eval results with their samples, public lm-eval files — with one mutation applied to one
side. Categories (the issue's list): truncation, byte flips, non-UTF-8 bytes, wrong JSON types at
random paths, deleted and extra keys, NaN/Infinity/huge integers, nesting 300–1,000 deep, duplicate
doc ids, garbled samples lines, injection strings in task, model and metric names and in doc fields.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: strings that must be shown literally wherever they land (rich markup, Markdown, LaTeX, terminal control)
INJECTIONS = [
    "[bold red]x[/]", "[/]", "[red]unclosed", "[link=https://example.com]click[/link]", "\x1b[31mred\x1b[0m",
    "a|b|c", "# heading", "1. item", "<script>alert(1)</script>", "\\input{/etc/passwd}", "$x^2$ & 100% #1 _~",
    "[optional]", "line\rreturn", "nul\x00byte", "`code`", "*bold* _it_", "{braces}", "tab\tcr\r\nlf",
    # HTML: markup that would run, a script block's end, a comment opener, U+2028 (ends a JS string in old engines)
    "<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "<!--", "a\u2028b",
]
CATEGORIES = ["truncate", "byte_flip", "non_utf8", "wrong_type", "delete_key", "extra_key", "non_finite",
              "huge_int", "deep_nesting", "duplicate_doc", "garbled_line", "injection", "one_cluster",
              "renamed_samples"]
#: names a renamed samples file gets (the last: lm-eval's own pattern, of another task and time)
RENAMES = ["rows.jsonl", "per_doc.jsonl", "samples.jsonl", "x y (copy).jsonl",
           "samples_othertask_2024-01-01T00-00-00.000000.jsonl"]


@dataclass
class Case:
    """One fuzz case: the two inputs of ``compare`` (paths), its category and the injected string, if any."""

    category: str
    a: Path
    b: Path
    injected: str | None = None
    #: the injected string is a task name, so every report must show it (literally)
    displayed: bool = False


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:20]):
            out += _paths(v, (*prefix, i))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _random_value(rng: random.Random) -> Any:
    return rng.choice([None, True, 0, -1, 10**23, 1.5, float("nan"), float("inf"), "", "x" * 50, [], {}, [1, "a"],
                       {"k": [None]}, "8", "auto"])


def _dump(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    text = text.replace('"@@DIGITS5000@@"', "9" * 5000)  # Python will not encode such an int itself
    return re.sub(r'"@@NEST(\d+)@@"', lambda m: "[" * int(m.group(1)) + "1" + "]" * int(m.group(1)), text)


def _mutate_json(obj: Any, rng: random.Random, category: str) -> tuple[Any, str | None]:
    """A mutated deep copy of a JSON document; returns (document, injected string or None)."""
    obj = json.loads(json.dumps(obj))
    paths = [p for p in _paths(obj) if p]
    injected = None
    path = rng.choice(paths) if paths else ()
    if category == "wrong_type" and path:
        _set(obj, path, _random_value(rng))
    elif category == "delete_key":
        dict_paths = [p for p in paths if isinstance(p[-1], str)]
        if dict_paths:
            p = rng.choice(dict_paths)
            del _get(obj, p[:-1])[p[-1]]
    elif category == "extra_key":
        dicts = [p for p in [(), *paths] if isinstance(_get(obj, p), dict)]
        _get(obj, rng.choice(dicts))[rng.choice(["surprise", "kind", "results", "doc_id"])] = _random_value(rng)
    elif category in ("non_finite", "huge_int"):
        nums = [p for p in paths if isinstance(_get(obj, p), (int, float)) and not isinstance(_get(obj, p), bool)]
        if nums:
            huge = rng.choice([10**23, -(10**30), 2**64, "@@DIGITS5000@@" if rng.random() < 0.2 else 10**19])
            _set(obj, rng.choice(nums), rng.choice([float("nan"), float("inf"), -float("inf")])
                 if category == "non_finite" else huge)
    elif category == "deep_nesting" and path:
        # a placeholder, expanded in the text by _dump: encoding 1,000 levels would hit Python's recursion limit
        _set(obj, path, f"@@NEST{rng.randint(300, 1000)}@@")
    elif category == "injection":
        injected = rng.choice(INJECTIONS)
        strs = [p for p in paths if isinstance(_get(obj, p), str)]
        keys = [p for p in paths if isinstance(p[-1], str)]
        if strs and rng.random() < 0.5:
            p = rng.choice(strs)
            _set(obj, p, injected + _get(obj, p)[:20])
        elif keys:
            p = rng.choice(keys)
            parent = _get(obj, p[:-1])
            parent[injected + p[-1]] = parent.pop(p[-1])
    return obj, injected


def _rename_task(res: dict, samples_lines: list[str], name: str) -> tuple[dict, list[str]]:
    """Rename the (first) task everywhere in an lm-eval results file, as an injection into a task name."""
    old = next(iter(res["results"]))
    out = json.loads(json.dumps(res))
    for key in ("results", "configs", "versions", "n-shot", "n-samples", "higher_is_better"):
        if isinstance(out.get(key), dict) and old in out[key]:
            out[key][name] = out[key].pop(old)
    return out, samples_lines


class Generator:
    """Writes fuzz cases under ``workdir`` from the real files in ``bases``.

    Args:
        bases: ``(kind, results_or_run_path, samples_path_or_None)`` triples.
        workdir: where mutated copies are written (one folder per case).
        seed: the RNG seed; the same seed gives the same cases.
    """

    def __init__(self, bases: list[tuple[str, Path, Path | None]], workdir: Path, seed: int = 0):
        self.bases, self.workdir, self.rng = bases, workdir, random.Random(seed)
        self.loaded = [(kind, json.loads(Path(p).read_text()), Path(p), sp,
                        Path(sp).read_text().splitlines() if sp else None) for kind, p, sp in bases]

    def case(self, i: int, category: str) -> Case:
        rng = self.rng
        fits = {"one_cluster": [x for x in self.loaded if x[0] == "repaudit"],
                "renamed_samples": [x for x in self.loaded if x[4] is not None]}.get(category) or self.loaded
        kind, doc, path, sp, lines = rng.choice(fits)
        folder = self.workdir / f"case{i:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        a_dir, b_dir = folder / "a", folder / "b"
        a_dir.mkdir(exist_ok=True)
        b_dir.mkdir(exist_ok=True)
        # A is the unmodified file; B the mutated one, under the same names (samples found beside it)
        shutil.copy(path, a_dir / path.name)
        if sp:
            shutil.copy(sp, a_dir / Path(sp).name)
        target_samples = rng.random() < 0.4 and lines is not None
        injected, displayed = None, False
        text_b = path.read_text()
        samples_b = "\n".join(lines) + "\n" if lines is not None else None
        if category in ("truncate", "byte_flip", "non_utf8"):
            data = (samples_b if target_samples else text_b).encode()
            data = _byte_mutation(data, rng, category)
            if target_samples:
                (b_dir / Path(sp).name).write_bytes(data)
                samples_b = None
            else:
                (b_dir / path.name).write_bytes(data)
                text_b = None
        elif category == "duplicate_doc" and lines is None and kind != "repaudit":
            # no per-doc records: duplicate a top-level key instead (JSON allows it; the last one wins)
            key = next(iter(json.loads(text_b)))
            text_b = "{" + json.dumps(key) + ": " + _dump(_random_value(rng)) + ", " + text_b.lstrip()[1:]
        elif category in ("duplicate_doc", "garbled_line") and (lines is not None or kind == "repaudit"):
            if kind == "repaudit":
                obj = json.loads(text_b)
                if obj.get("docs"):
                    obj["docs"].append(dict(obj["docs"][rng.randrange(len(obj["docs"]))]))
                    if category == "garbled_line":
                        obj["docs"][-1] = rng.choice(["garbage", 17, None, {"doc_id": "x"}])
                text_b = _dump(obj)
            else:
                new = list(lines)
                j = rng.randrange(len(new))
                if category == "duplicate_doc":
                    new.insert(rng.randrange(len(new) + 1), new[j])
                else:
                    new[j] = rng.choice(["{not json", "[1,2]", '{"doc_id": -4}', '{"doc_id": "seven"}', "\x00\x01",
                                         new[j][: len(new[j]) // 2], '{"doc_id": 1e400}'])
                samples_b = "\n".join(new) + "\n"
        elif category == "one_cluster" and kind == "repaudit":
            # every doc in one cluster, in both runs: a cluster-robust interval has nothing to resample
            label = rng.choice(["all", "", "x" * 300, "<b>c</b>"])
            for d, text in ((a_dir, path.read_text()), (None, text_b)):
                obj = json.loads(text)
                for doc_ in obj.get("docs") or []:
                    if isinstance(doc_, dict):
                        doc_["cluster"] = label
                if d is None:
                    text_b = _dump(obj)
                else:
                    (d / path.name).write_text(_dump(obj))
        elif category == "renamed_samples" and sp and lines is not None:
            # B's samples under another name (as researchers rename them), sometimes cut or from another run
            new = list(lines)
            if rng.random() < 0.3:
                new = new[: max(1, len(new) // 2)]
            if rng.random() < 0.2:
                new = [ln.replace('"doc_id": ', '"doc_id": 9', 1) for ln in new]
            (b_dir / rng.choice(RENAMES)).write_text("\n".join(new) + "\n", encoding="utf-8")
            samples_b = None
        elif category == "injection" and kind == "lmeval" and rng.random() < 0.5:
            injected, displayed = rng.choice(INJECTIONS), True
            res, _ = _rename_task(json.loads(text_b), lines or [], injected + "task")
            text_b = _dump(res)
            if rng.random() < 0.7:  # both sides share the injected task name: it is in every report
                a_res, _ = _rename_task(json.loads(path.read_text()), lines or [], injected + "task")
                (a_dir / path.name).write_text(_dump(a_res))
            else:  # B only: with one task the runs share none, and the error line names it
                displayed = len(res["results"]) == 1
            samples_b = None
            for d in (a_dir, b_dir):
                for s in d.glob("samples_*"):
                    s.unlink()
        else:
            if target_samples and lines:
                new = list(lines)
                j = rng.randrange(len(new))
                mutated, injected = _mutate_json(json.loads(new[j]), rng, category)
                new[j] = _dump(mutated)
                samples_b = "\n".join(new) + "\n"
            else:
                mutated, injected = _mutate_json(json.loads(text_b), rng, category)
                text_b = _dump(mutated)
        if text_b is not None:
            (b_dir / path.name).write_text(text_b, encoding="utf-8", errors="surrogatepass")
        if samples_b is not None and sp:
            (b_dir / Path(sp).name).write_text(samples_b, encoding="utf-8", errors="surrogatepass")
        return Case(category, a_dir / path.name, b_dir / path.name, injected, displayed)


def _byte_mutation(data: bytes, rng: random.Random, category: str) -> bytes:
    if category == "truncate":
        return data[: rng.randrange(max(1, len(data)))]
    buf = bytearray(data)
    if category == "byte_flip":
        for _ in range(rng.randint(1, 8)):
            k = rng.randrange(len(buf))
            buf[k] = rng.randrange(256)
        return bytes(buf)
    k = rng.randrange(len(buf) + 1)
    return bytes(buf[:k]) + rng.choice([b"\xff\xfe", b"\xc3\x28", b"\x80", b"\xed\xa0\x80"]) + bytes(buf[k:])


@dataclass
class Outcome:
    """How ``repaudit compare`` handled one case: ``ok`` (exit 0, sane output), ``refused`` (exit 1, one
    ``error:`` line, no output file), or a failure: ``traceback``, ``partial_output``, ``bad_error``,
    ``bad_output``, ``not_literal`` (an injected string was not shown literally)."""

    status: str
    detail: str = ""


FORMATS = ("rich", "markdown", "latex", "json", "html")
SUFFIX = {"rich": "txt", "markdown": "md", "latex": "tex", "json": "json", "html": "html"}


def literal_forms(injected: str) -> list[str]:
    """How an injected string reads, shown literally, in any of the outputs (its escaped forms)."""
    from markupsafe import escape

    from repaudit.escape import latex, md, visible_controls

    vis = visible_controls(injected).replace("\t", " ")
    one = vis.replace("\n", "\\n")
    return [vis, vis.replace("\n", " "), one, md(injected), latex(injected), latex(one), str(escape(one))]


def markdown_text(body: str) -> str:
    """The text a reader sees when ``body`` is rendered as CommonMark (raw HTML kept as tags, then removed): an
    injected string is shown literally when it is in this text, whatever escapes the renderer needed (``_`` inside
    a word needs none; at a word's edge it does)."""
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    return html.unescape(re.sub(r"<[^>]*>", "", rendered))


def run_case(case: Case, fmt: str, out_dir: Path) -> Outcome:
    """Run ``repaudit compare`` on ``case`` in ``fmt`` (written to a file under ``out_dir``) and judge it."""
    from typer.testing import CliRunner

    from repaudit.cli import app

    out = out_dir / f"report.{SUFFIX[fmt]}"
    res = CliRunner().invoke(app, ["compare", str(case.a), str(case.b), "--format", fmt, "-o", str(out),
                                   "--n-boot", "200"])
    text = res.stdout + res.stderr
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        import traceback

        tb = "".join(traceback.format_exception(res.exception))[-600:]
        return Outcome("traceback", f"{type(res.exception).__name__}: {tb}")
    if "Traceback" in text:
        return Outcome("traceback", text[-600:])
    if res.exit_code == 1:
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        if out.exists():
            return Outcome("partial_output", str(out))
        if len(errors) != 1:
            return Outcome("bad_error", res.stderr[-400:])
        if case.injected and any(x in errors[0] for x in ("\x1b", "\x00", "\r")):
            return Outcome("not_literal", errors[0])
        if case.displayed and "no task in common" in errors[0] and not any(
                form in errors[0] for form in literal_forms(case.injected)):
            return Outcome("not_literal", errors[0])
        return Outcome("refused", errors[0])
    if res.exit_code != 0:
        return Outcome("bad_error", f"exit {res.exit_code}: {res.stderr[-300:]}")
    if not out.is_file():
        return Outcome("bad_output", "exit 0 without the output file")
    body = out.read_text(encoding="utf-8")
    if fmt == "json":
        try:
            json.loads(body)
        except ValueError as exc:
            return Outcome("bad_output", f"invalid JSON report: {exc}")
    if fmt == "latex" and (body.count(r"\begin{tabular}") != body.count(r"\end{tabular}")
                           or body.count(r"\begin{longtable}") != body.count(r"\end{longtable}")
                           or any(ch in body for ch in "\x00\x1b\r") or not body.isascii()):
        return Outcome("bad_output", "unbalanced or non-ASCII LaTeX")
    if fmt == "latex":  # line-break points in long names print nothing: the text is still literal
        body = body.replace(r"\allowbreak{}", "")
    if fmt == "html":
        bad = html_static_problem(body)
        if bad:
            return Outcome("bad_output", bad)
    if fmt in ("rich", "markdown") and any(ch in body for ch in "\x00\x1b\r"):
        return Outcome("bad_output", "control characters in the report")
    shown = markdown_text(body) if fmt == "markdown" else body
    if case.displayed and fmt != "json" and not any(form in shown for form in literal_forms(case.injected)):
        return Outcome("not_literal", f"{case.injected!r} not shown literally in the {fmt} report")
    if fmt == "markdown" and any("\r" in line or line.count("|") % 2 and line.startswith("|") and
                                 not line.rstrip().endswith("|") for line in body.splitlines()):
        return Outcome("bad_output", "a broken Markdown table row")
    return Outcome("ok")


def html_static_problem(page: str) -> str:
    """What is wrong with an HTML report read as text, or "": exactly one inline script, allowed by its
    sha256 in the Content-Security-Policy; a data block of base64 only; no control characters."""
    import base64
    import hashlib
    import html

    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    if len(scripts) != 1 or csp is None:
        return f"{len(scripts)} inline scripts, CSP {'present' if csp else 'missing'}"
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
    if f"'sha256-{digest}'" not in html.unescape(csp.group(1)) or "default-src 'none'" not in html.unescape(
            csp.group(1)):
        return "the CSP does not pin the page's one script or allows network loads"
    blocks = re.findall(r'<script type="application/octet-stream" id="docdata">(.*?)</script>', page, flags=re.S)
    if len(re.findall(r"<script", page)) != 1 + len(blocks) or any(
            not re.fullmatch(r"[A-Za-z0-9+/=]*", b) for b in blocks):
        return "a script tag other than the page's script and its base64 data block"
    if any(ch in page for ch in "\x00\x1b\r"):
        return "control characters in the page"
    return ""


def check_in_browser(driver, path: Path) -> Outcome:
    """Open an HTML report in a Selenium-driven browser: ``ok`` when the page finished (``data-ready`` 1), no
    alert opened, the title is the one written, no ``img``/``iframe``/``object`` element exists, and the console
    has no error; ``script_ran`` when an alert opened or the title changed; ``broken_page`` otherwise."""
    import html

    from selenium.common.exceptions import NoAlertPresentException, TimeoutException, UnexpectedAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    title = html.unescape(re.search(r"<title>(.*?)</title>", path.read_text(encoding="utf-8"), flags=re.S).group(1))
    try:
        driver.get(path.resolve().as_uri())
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") != "0")
        try:
            text = driver.switch_to.alert.text
            driver.switch_to.alert.dismiss()
            return Outcome("script_ran", f"an alert opened: {text!r}")
        except NoAlertPresentException:
            pass
        if driver.title != title:
            return Outcome("script_ran", f"title changed to {driver.title!r}")
        ready = driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
        embeds = driver.find_elements(By.CSS_SELECTOR, "img, iframe, object, embed")
        errors = [e["message"][:200] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    except UnexpectedAlertPresentException as exc:
        return Outcome("script_ran", f"an alert opened: {exc.alert_text!r}")
    except TimeoutException:
        return Outcome("broken_page", "the page never finished (data-ready stayed 0)")
    if ready != "1" or embeds or errors:
        return Outcome("broken_page", f"data-ready {ready}, {len(embeds)} embedded elements, console: {errors[:2]}")
    return Outcome("ok")


def headless_chromium():
    """A Selenium driver of Debian's headless Chromium (``chromium`` + ``chromedriver``), or None with the reason."""
    import os

    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "selenium is not installed"
    binary = os.environ.get("REPAUDIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("REPAUDIT_CHROMEDRIVER") or shutil.which("chromedriver")
    if not binary or not driver:
        return None, "headless Chromium not found (apt-get install chromium chromium-driver)"
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = binary
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=opts), ""


#: mutations of inspect_ai ``.eval`` logs (ZIP archives), one per category
EVAL_CATEGORIES = ["zip_truncate", "zip_byte_flip", "zip_member_json", "zip_declared_bomb", "zip_lying_size",
                   "zip_traversal", "zip_method", "zip_no_header", "zip_duplicate_sample", "zip_injection"]


def _zip_members(path: Path) -> list[tuple[str, bytes]]:
    from repaudit.ziparchive import ZipArchive

    with ZipArchive(path) as z:
        return [(name, z.read(name)) for name in z.names()]


def _write_zip(path: Path, members: list[tuple[str, bytes]], method: int = 8) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)


def _patch_sizes(data: bytes, k: int, size: int) -> bytes:
    """``data`` (a ZIP) with entry ``k``'s uncompressed size in the central directory set to ``size``."""
    buf = bytearray(data)
    end = data.rfind(b"PK\x05\x06")
    off = int.from_bytes(data[end + 16:end + 20], "little")
    for _ in range(k):
        n, m, c = (int.from_bytes(data[off + x:off + x + 2], "little") for x in (28, 30, 32))
        off += 46 + n + m + c
    buf[off + 24:off + 28] = size.to_bytes(4, "little")
    return bytes(buf)


class EvalGenerator:
    """Fuzz cases from a real inspect ``.eval`` log: A is the log, B a mutation of it (:data:`EVAL_CATEGORIES`)."""

    def __init__(self, base: Path, workdir: Path, seed: int = 0):
        self.base, self.workdir, self.rng = Path(base), workdir, random.Random(seed)
        self.members = _zip_members(self.base)

    def case(self, i: int, category: str) -> Case:
        rng = self.rng
        folder = self.workdir / f"eval{i:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        a, b = folder / "a.eval", folder / "b.eval"
        shutil.copy(self.base, a)
        members = list(self.members)
        injected, displayed = None, False
        samples = [k for k, (n, _) in enumerate(members) if n.startswith("samples/")]
        if category in ("zip_truncate", "zip_byte_flip"):
            data = self.base.read_bytes()
            b.write_bytes(_byte_mutation(data, rng, "truncate" if category == "zip_truncate" else "byte_flip"))
            return Case(category, a, b)
        if category == "zip_member_json":
            k = rng.choice([k for k, (n, _) in enumerate(members) if n.endswith(".json")])
            sub = rng.choice(["wrong_type", "delete_key", "extra_key", "non_finite", "huge_int", "deep_nesting",
                              "injection"])
            mutated, injected = _mutate_json(json.loads(members[k][1]), rng, sub)
            members[k] = (members[k][0], _dump(mutated).encode("utf-8", "surrogatepass"))
        elif category == "zip_traversal":
            members.append((rng.choice(["../../evil.json", "/etc/evil.json", "samples/../../x_epoch_1.json",
                                        "samples\\..\\x_epoch_1.json", "C:/x.json"]), b"{}"))
        elif category == "zip_no_header":
            drop = rng.choice([{"header.json"}, {"header.json", "_journal/start.json"}])
            members = [(n, d) for n, d in members if n not in drop]
        elif category == "zip_duplicate_sample":
            name, data = members[rng.choice(samples)]
            members.append((name[:-len(".json")] + "/sample.json", data))
        elif category == "zip_injection":
            injected, displayed = rng.choice(INJECTIONS), True
            for k, (n, d) in enumerate(members):
                if n in ("header.json", "_journal/start.json"):
                    obj = json.loads(d)
                    obj["eval"]["task"] = injected + "task"
                    members[k] = (n, _dump(obj).encode("utf-8", "surrogatepass"))
            _write_zip(a, members)  # both sides: the injected task name is in every report
        if category == "zip_method":
            _write_zip(b, members, method=rng.choice([12, 14]))  # bzip2, LZMA: not what inspect writes
        elif category in ("zip_declared_bomb", "zip_lying_size"):
            k = rng.choice(samples)
            if category == "zip_lying_size":  # the member is 32 MiB of JSON whitespace, declared as its old size
                members[k] = (members[k][0], members[k][1] + b" " * (32 << 20))
            _write_zip(b, members)
            size = (0xFFFFFFF0 if category == "zip_declared_bomb" else len(self.members[k][1]))
            b.write_bytes(_patch_sizes(b.read_bytes(), k, size))
        else:
            _write_zip(b, members)
        return Case(category, a, b, injected, displayed)
