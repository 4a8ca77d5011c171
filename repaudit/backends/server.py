"""What a served model's endpoint says about itself, read once when a run starts: the fingerprint's server facts.

Each fact is *recorded* from the route that said it (named in :attr:`ServerFacts.sources`):

* ``GET /v1/models`` — the served model ids; vLLM adds each one's ``root`` (the weights it was started from) and
  ``max_model_len``; ``owned_by`` names vLLM (``vllm``), SGLang (``sglang``) or llama.cpp (``llamacpp``);
* ``GET /version`` (vLLM) — its version;
* ``GET /get_server_info`` (SGLang) — its version and serving arguments (dtype, tensor-parallel size, attention and
  sampling backends, seed, context length, …);
* ``GET /props`` (llama.cpp's server) — its build, context size, model file and its file type (``model_ftype``:
  ``Q4_1``, ``F16``, …), chat template and special tokens;
* ``GET /tokenizer_info`` (vLLM with ``--enable-tokenizer-info-endpoint``) — the tokenizer's special tokens and chat
  template;
* ``system_fingerprint`` of every response, gathered while the run answers its requests.

What the run sent (the base URL, credentials removed; the variable the key came from) is *set*; what no route tells
— the weights' dtype and files, the accelerator, the engine's own settings — is listed in
:attr:`ServerFacts.not_recorded`, never guessed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.backends.endpoint import Endpoint
from repaudit.errors import EndpointError

ServerKind = Literal["vllm", "sglang", "llama.cpp", "unknown"]

#: SGLang ``/get_server_info`` keys that can change numbers (recorded as the server reports them)
SGLANG_FACTS = ("version", "dtype", "kv_cache_dtype", "quantization", "tp_size", "dp_size", "pp_size",
                "attention_backend", "sampling_backend", "random_seed", "context_length", "max_running_requests",
                "chunked_prefill_size", "disable_radix_cache", "enable_deterministic_inference", "model_path")
#: what no OpenAI-compatible route tells, for every server kind
NOT_TOLD = ("serving.device (the accelerator behind the endpoint)",
            "model.weights_sha256 (the weight files are not served)",
            "tokenizer.sha256 (the tokenizer files are not served)")


class ServerFacts(BaseModel):
    """A served model's endpoint as a run used it (see the module docstring): recorded facts, what was set, and what
    could not be told."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    base_url: str
    """The base URL requests were sent to, without user name, password or query (set by the run)."""
    kind: ServerKind
    """The server: vllm, sglang, llama.cpp, or unknown where no introspection route answered (recorded: the route
    that answered, or ``owned_by`` of /v1/models)."""
    version: str | None = None
    """The server's version (vLLM /version; SGLang /get_server_info; llama.cpp /props build_info); None: not told."""
    model_id: str
    """The served model id requests named (recorded in /v1/models)."""
    model_root: str | None = None
    """What the model id serves (vLLM's ``root``: the path or hub id the server loaded); None: not told."""
    max_model_len: int | None = None
    """The server's context window in tokens (vLLM /v1/models ``max_model_len``; SGLang ``context_length``;
    llama.cpp ``n_ctx``); None: not told (requests are then sent uncut)."""
    tokenizer: str
    """Whose tokenisation located the continuation tokens: ``server /tokenize`` or ``local <name>`` (--tokenizer);
    ``none`` where neither exists (generation only)."""
    api_key_env: str | None = None
    """The environment variable the API key was read from (the key itself is never recorded); None: no key sent."""
    routes: list[str] = []
    """The routes the run's requests used (``/v1/completions``, ``/v1/chat/completions``, ``/tokenize``)."""
    system_fingerprints: list[str] = []
    """The distinct ``system_fingerprint`` values of the responses, sorted (empty: the server sent none)."""
    facts: dict[str, Any] = {}
    """Other facts the server reported about its serving (SGLang's arguments, llama.cpp's build and slots, vLLM's
    special tokens), under the keys the server used."""
    sources: dict[str, str] = {}
    """Fact → the route and key it was read from (``version`` → ``GET /version version``)."""
    not_recorded: list[str] = []
    """What no route of this endpoint told (the dtype of the weights behind it, the accelerator, …)."""


def _models(ep: Endpoint) -> list[dict[str, Any]]:
    """The ``data`` list of ``GET /v1/models``.

    Raises:
        EndpointError: no answer, or an answer without a ``data`` list.
    """
    obj = ep.get("/models")
    data = obj.get("data") if isinstance(obj, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
        raise EndpointError(f"endpoint {ep.url}/models answered without a list of models (data[].id): is --base-url "
                            "an OpenAI-compatible server (it ends in /v1)?")
    return data


def pick_model(ep: Endpoint, model: str) -> tuple[dict[str, Any], list[str]]:
    """The ``/v1/models`` entry of ``model`` (``default``: the only model served) and every id served.

    Raises:
        EndpointError: a model the endpoint does not serve, or ``default`` where it serves none or several.
    """
    data = _models(ep)
    ids = [m["id"] for m in data]
    if model == "default":
        if len(data) != 1:
            raise EndpointError(f"endpoint {ep.url} serves {len(data)} models ({', '.join(ids) or 'none'}): name one "
                                "with --model")
        return data[0], ids
    for m in data:
        if m["id"] == model:
            return m, ids
    raise EndpointError(f"endpoint {ep.url} does not serve model '{model}': it serves {', '.join(ids) or 'none'}")


def describe_server(ep: Endpoint, model: str) -> ServerFacts:
    """The endpoint's facts for ``model`` (see the module docstring); ``tokenizer`` is filled by the backend.

    Raises:
        EndpointError: what :func:`pick_model` raises.
    """
    entry, _ = pick_model(ep, model)
    sources: dict[str, str] = {"model_id": "GET /v1/models data[].id"}
    facts: dict[str, Any] = {}
    owner = str(entry.get("owned_by") or "")
    kind: ServerKind = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp"}.get(owner, "unknown")  # type: ignore[assignment]
    if kind != "unknown":
        sources["kind"] = f"GET /v1/models owned_by ({owner})"
    root = entry.get("root") if isinstance(entry.get("root"), str) else None
    if root is not None:
        sources["model_root"] = "GET /v1/models data[].root"
    max_len = entry.get("max_model_len") if _is_int(entry.get("max_model_len")) else None
    if max_len is not None:
        sources["max_model_len"] = "GET /v1/models data[].max_model_len"
    version = None
    if kind in ("vllm", "unknown") and (v := ep.probe("GET", "/version", root=True)) and isinstance(
            v.get("version"), str):
        version, kind = v["version"], "vllm"
        sources.update(version="GET /version version", kind=sources.get("kind", "GET /version answered"))
    if kind in ("sglang", "unknown") and (info := ep.probe("GET", "/get_server_info", root=True)):
        kind = "sglang"
        sources.setdefault("kind", "GET /get_server_info answered")
        facts.update({k: info[k] for k in SGLANG_FACTS if k in info and _plain(info[k])})
        if isinstance(info.get("version"), str):
            version = info["version"]
            sources["version"] = "GET /get_server_info version"
        if max_len is None and _is_int(info.get("context_length")):
            max_len = info["context_length"]
            sources["max_model_len"] = "GET /get_server_info context_length"
    if kind in ("llama.cpp", "unknown") and (props := ep.probe("GET", "/props", root=True)):
        kind = "llama.cpp"
        sources.setdefault("kind", "GET /props answered")
        gen = props.get("default_generation_settings") if isinstance(props.get("default_generation_settings"),
                                                                      dict) else {}
        if isinstance(props.get("build_info"), str):
            version = props["build_info"]
            sources["version"] = "GET /props build_info"
        n_ctx = gen.get("n_ctx", props.get("n_ctx"))
        if max_len is None and _is_int(n_ctx):
            max_len = n_ctx
            sources["max_model_len"] = "GET /props default_generation_settings.n_ctx"
        facts.update({k: props[k] for k in ("model_path", "model_ftype", "total_slots", "bos_token", "eos_token")
                      if k in props and _plain(props[k])})
    not_told = list(NOT_TOLD)
    if "model_ftype" in facts:  # llama.cpp names the weights' file type (Q4_1, F16, …), not what it computes in
        not_told.insert(0, "serving.dtype (the activations' dtype behind the endpoint; the weights' file type is "
                           "facts.model_ftype)")
    elif "dtype" not in facts:
        not_told.insert(0, "serving.dtype (the weights' and activations' dtype behind the endpoint)")
    if version is None:
        not_told.append("the server's version (no /version, /get_server_info or /props route answered)")
    return ServerFacts(base_url=ep.url, kind=kind, version=version, model_id=entry["id"], model_root=root,
                       max_model_len=max_len, tokenizer="none", api_key_env=ep.settings.api_key_env, facts=facts,
                       sources=sources, not_recorded=not_told)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _plain(v: Any) -> bool:
    """A JSON scalar (or a short list of them): what is worth keeping from an introspection answer."""
    if isinstance(v, (str, int, float, bool)) or v is None:
        return not isinstance(v, str) or len(v) <= 1000
    return isinstance(v, list) and len(v) <= 16 and all(isinstance(x, (str, int, float, bool)) for x in v)
