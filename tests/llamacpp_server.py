"""llama.cpp's own HTTP server serving a GGUF file, until SIGTERM or SIGINT: the second server kind of the served-model
tests (``tests/test_served_llamacpp.py``) and of ``bench/llamacpp_served.py``.

It runs in ``.venv-llamacpp`` (``make install-llamacpp``), whose one package, ``xllamacpp``, is a prebuilt wheel of
llama.cpp with its C++ server (``tools/server``: the routes of ``llama-server``, ``/v1/completions``, ``/props``,
``/tokenize``, …) compiled in; this script only fills the server's parameters, as ``llama-server``'s command line
would, and keeps the process alive while the server's own threads answer::

    .venv-llamacpp/bin/python tests/llamacpp_server.py MODEL.gguf --port 8080 --alias smollm2

It prints ``listening http://127.0.0.1:PORT`` once the model is loaded and the port is open. An API key, where one
is wanted, comes from the environment variable ``LLAMA_API_KEY`` (as ``llama-server`` reads it), never from the
command line.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf", help="the GGUF file to serve")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", default=None, help="the served model id (default: the file's path)")
    ap.add_argument("--ctx-size", type=int, default=2048, help="the context window, tokens (llama-server -c)")
    ap.add_argument("--parallel", type=int, default=1, help="slots: requests decoded at once (llama-server -np)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for generation and prompt batches")
    ap.add_argument("--no-cache-prompt", action="store_true",
                    help="compute every prompt whole (llama-server's default reuses a slot's cached prefix, which "
                         "changes the numbers: the prefix was computed in other batches)")
    args = ap.parse_args()

    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.gguf
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.ctx_size
    p.n_parallel = args.parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.cache_prompt = not args.no_cache_prompt
    if args.alias:
        p.model_alias = {args.alias}
    if os.environ.get("LLAMA_API_KEY"):
        p.api_keys = [os.environ["LLAMA_API_KEY"]]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(p)  # loads the model and starts listening; its threads answer the requests
    print("listening", server.listening_address, flush=True)
    stop.wait()
    del server  # its destructor stops the server's loop


if __name__ == "__main__":
    main()
