"""An OpenAI-compatible HTTP endpoint: how to reach it, one request with retries, many in parallel.

:class:`EndpointSettings` is what the command line says about an endpoint (``--base-url``, ``--api-key-env``,
``--timeout``, ``--max-retries``, ``--tokenizer``); :class:`Endpoint` sends requests to it through an ``httpx``
client: each one retried with exponential back-off and jitter on a refused or dropped connection, a timeout, 429
(honouring ``Retry-After``) and 5xx, never on another 4xx; every failure left after the retries is one
:class:`EndpointError` line that names the endpoint (credentials removed) and what it answered. :meth:`Endpoint.map`
runs requests ``max_concurrency`` at a time and hands each finished result to the caller in the caller's thread, so
a batch store (SQLite, one thread) commits every finished request before a failure stops the rest.

The API key is read from the environment variable ``api_key_env`` names, when the client is built, and sent as a
bearer token; it is never stored in a settings record, a run file, a report or a log, and it is cut out of any
server message quoted in an error.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from repaudit.errors import EndpointError, RepauditError

T = TypeVar("T")
R = TypeVar("R")

#: HTTP statuses worth another try: rate limited, and the server's own transient failures
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
#: seconds of the first back-off, and the longest one (exponential in between, with full jitter)
BACKOFF_BASE_S, BACKOFF_MAX_S = 0.5, 30.0
#: a Retry-After longer than this is not waited for: the error says how long the server asked for
MAX_RETRY_AFTER_S = 120.0


class EndpointSettings(BaseModel):
    """How to reach a served model (not a factor: where it is, not what it computes; the fingerprint records the
    server's own facts instead, :class:`repaudit.run.fingerprint.ServerFacts`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    base_url: str = Field(min_length=8, max_length=2048)
    """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8000/v1`` (vLLM, SGLang and llama.cpp servers)."""
    api_key_env: str | None = Field(None, max_length=200)
    """The environment variable holding the API key (sent as a bearer token); None: no key is sent."""
    timeout_s: float = Field(600.0, gt=0, le=86_400)
    """Seconds one request may take (connecting: at most 30 of them)."""
    max_retries: int = Field(4, ge=0, le=100)
    """Further tries of a request after a transient failure (connection, timeout, 429, 5xx)."""
    tokenizer: str | None = Field(None, min_length=1, max_length=4096)
    """A local tokenizer (a model directory or hub id) for servers that offer no ``/tokenize``; None: the server's
    own ``/tokenize``."""

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1, got "
                             f"'{redact_url(v)}'")
        return v.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError(f"--api-key-env takes the name of an environment variable (letters, digits, _), "
                             f"not a key; got a value of {len(v)} characters")
        return v


def redact_url(url: str) -> str:
    """``url`` without user name, password, query and fragment: what may be recorded and printed
    (``https://user:key@host/v1?api_key=…`` → ``https://host/v1``)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 literal
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port is not None else "")
    except ValueError:
        return "<unparsable URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def server_root(base_url: str) -> str:
    """The server's root URL: ``base_url`` without a trailing ``/v1`` (vLLM's ``/version`` and ``/tokenize``,
    llama.cpp's ``/props`` and SGLang's ``/get_server_info`` live there)."""
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class Endpoint:
    """A client of one endpoint (see the module docstring).

    Args:
        settings: where it is and how to authenticate.
        max_concurrency: requests in flight at once (:meth:`map`).
        sleep: how back-off waits (the tests pass a recorder).

    Raises:
        RepauditError: ``api_key_env`` names a variable that is not set.
    """

    def __init__(self, settings: EndpointSettings, max_concurrency: int = 8,
                 sleep: Callable[[float], None] = time.sleep):
        import httpx

        self.settings = settings
        self.url = redact_url(settings.base_url)
        self.max_concurrency = max_concurrency
        self._sleep = sleep
        self._secret = None
        headers = {"User-Agent": "repaudit"}
        if settings.api_key_env is not None:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise RepauditError(f"--api-key-env {settings.api_key_env}: the variable is not set (or empty)")
            self._secret = key
            headers["Authorization"] = f"Bearer {key}"
        t = settings.timeout_s
        # connections are not limited here: :meth:`map` keeps max_concurrency requests in flight, and a run may
        # change it without a new client
        self._client = httpx.Client(timeout=httpx.Timeout(t, connect=min(t, 30.0)), headers=headers,
                                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self._httpx = httpx
        self.base = settings.base_url
        self.root = server_root(settings.base_url)
        #: requests sent and retries made by this client (what a run's timings report)
        self.sent = 0
        self.retries = 0

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    # ------------------------------------------------------------------ one request
    def post(self, path: str, body: dict[str, Any], root: bool = False) -> Any:
        """POST ``body`` as JSON to ``path`` (under the base URL, or the server root with ``root``) and return the
        parsed JSON answer, retrying transient failures (see the module docstring).

        Raises:
            EndpointError: no answer after the retries, an error status, or a body that is not JSON.
        """
        return self._request("POST", path, body, root)

    def get(self, path: str, root: bool = False) -> Any:
        """GET ``path`` as :meth:`post` does.

        Raises:
            EndpointError: as :meth:`post`.
        """
        return self._request("GET", path, None, root)

    def probe(self, method: str, path: str, body: dict[str, Any] | None = None, root: bool = False) -> Any | None:
        """One request that may legitimately not exist (an introspection or tokenisation route of another server
        kind): its JSON, or None on 404, 405, 501 or a body that is not a JSON object. A connection failure or an
        authentication failure still raises: the endpoint itself is at fault, not the route.

        Raises:
            EndpointError: the endpoint cannot be reached, refuses the key, or keeps failing.
        """
        try:
            out = self._request(method, path, body, root, quiet=frozenset({400, 404, 405, 422, 501}))
        except _Absent:
            return None
        return out if isinstance(out, dict) else None  # _Absent also stands for a 2xx body that is not JSON

    def _request(self, method: str, path: str, body: dict[str, Any] | None, root: bool,
                 quiet: frozenset[int] = frozenset()) -> Any:
        url = (self.root if root else self.base) + path
        shown = (redact_url(self.root) if root else self.url) + path
        httpx = self._httpx
        for attempt in range(self.settings.max_retries + 1):
            last = attempt == self.settings.max_retries
            try:
                self.sent += 1
                resp = self._client.request(method, url, json=body)
            except httpx.TimeoutException:
                why = f"no answer within {self.settings.timeout_s:g} s (--timeout)"
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                why = f"cannot be reached ({self._clean(_first_line(exc))})"
            except httpx.HTTPError as exc:  # anything else httpx raises: an invalid URL, too many redirects
                raise EndpointError(f"endpoint {shown}: {self._clean(_first_line(exc))}") from None
            else:
                if resp.status_code < 400:
                    if quiet:  # a probe: a route that answers with something else than JSON is not the one asked for
                        try:
                            return self._json(resp, shown)
                        except EndpointError:
                            raise _Absent from None
                    return self._json(resp, shown)
                if resp.status_code in quiet:
                    raise _Absent
                why = f"answered HTTP {resp.status_code}{self._message(resp)}"
                if resp.status_code not in RETRY_STATUSES:
                    raise EndpointError(f"endpoint {shown} {why}{_hint(resp.status_code, self.settings)}")
                wait_s = _retry_after(resp)
                if wait_s is not None and wait_s > MAX_RETRY_AFTER_S:
                    raise EndpointError(f"endpoint {shown} {why}; it asked to retry after {wait_s:.0f} s, longer "
                                        f"than repaudit waits ({MAX_RETRY_AFTER_S:.0f} s): run again later (finished "
                                        "requests are kept)")
                if not last:
                    self.retries += 1
                    self._sleep(wait_s if wait_s is not None else _backoff(attempt))
                    continue
            if last:
                tries = self.settings.max_retries + 1
                # a scoring request fails after others were answered and stored; an introspection one before any
                resume = ("; finished requests are kept: run the same command again to resume"
                          if path.endswith("completions") else "")
                raise EndpointError(f"endpoint {shown} {why}, after {tries} attempt{'s' * (tries > 1)} "
                                    f"(--max-retries){resume}")
            self.retries += 1
            self._sleep(_backoff(attempt))
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def _json(self, resp, shown: str) -> Any:
        import json

        try:
            return json.loads(resp.content)
        except (ValueError, RecursionError):
            raise EndpointError(f"endpoint {shown} answered HTTP {resp.status_code} with a body that is not JSON "
                                f"({len(resp.content)} bytes; a truncated or non-JSON answer)") from None

    def _message(self, resp) -> str:
        """': <the server's error message>' (its first line, at most 200 characters, the key cut out), or ''."""
        import json

        text = ""
        try:
            obj = json.loads(resp.content)
            err = obj.get("error", obj) if isinstance(obj, dict) else obj
            if isinstance(err, dict):
                err = err.get("message") or err.get("detail") or err.get("msg") or ""
            text = str(err) if not isinstance(err, (dict, list)) else ""
        except (ValueError, RecursionError):
            text = resp.text if resp.headers.get("content-type", "").startswith("text/") else ""
        text = self._clean(" ".join(text.split()))[:200]
        return f": {text}" if text else ""

    def _clean(self, text: str) -> str:
        """``text`` with the API key replaced (a server may quote the key it refused)."""
        return text.replace(self._secret, "<key>") if self._secret else text

    # ------------------------------------------------------------------ many requests
    def map(self, fn: Callable[[T], R], items: Iterable[T], done: Callable[[T, R], None],
            limit: int | None = None) -> None:
        """Call ``fn(item)`` for every item, at most ``limit`` (default ``max_concurrency``) at a time, and
        ``done(item, result)`` in this thread as each finishes (so a SQLite store commits it). On the first failure
        nothing more is started, the requests in flight finish (and are handed to ``done``), then the failure is
        raised; Ctrl-C stops starting requests the same way.

        Raises:
            EndpointError: the first request that failed (what ``fn`` raised).
        """
        todo = list(items)
        n = max(1, min(limit or self.max_concurrency, len(todo) or 1))
        failure: BaseException | None = None
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="repaudit-http") as pool:
            queue = iter(todo)
            running: dict[Future, T] = {}
            try:
                for item in queue:
                    running[pool.submit(fn, item)] = item
                    if len(running) >= n:
                        break
                while running:
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        item = running.pop(fut)
                        exc = fut.exception()
                        if exc is not None:
                            failure = failure or exc
                            continue
                        done(item, fut.result())
                        if failure is None:
                            for nxt in queue:  # the next item, where one is left
                                running[pool.submit(fn, nxt)] = nxt
                                break
            except KeyboardInterrupt:
                for fut in running:
                    fut.cancel()
                raise
        if failure is not None:
            raise failure


class _Absent(Exception):
    """A probed route this server does not have (:meth:`Endpoint.probe`)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _backoff(attempt: int) -> float:
    """Seconds before try ``attempt + 2``: full jitter over an exponential ceiling (AWS's "Exponential Backoff And
    Jitter", 2015), so that many clients that failed together do not retry together."""
    return random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** attempt))


def _retry_after(resp) -> float | None:
    """The seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date, RFC 9110 §10.2.3), or None."""
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _hint(status: int, settings: EndpointSettings) -> str:
    """What to do about a status that is not retried."""
    if status in (401, 403):
        where = (f"the key in ${settings.api_key_env} was refused" if settings.api_key_env else
                 "no key was sent: name the variable holding it with --api-key-env")
        return f" ({where})"
    if status == 404:
        return " (check --base-url, which ends in /v1 for vLLM, SGLang and llama.cpp, and --model)"
    return ""


__all__ = ["Endpoint", "EndpointError", "EndpointSettings", "redact_url", "server_root"]
