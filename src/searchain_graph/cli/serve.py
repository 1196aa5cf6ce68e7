"""``searchain serve`` (the local web app, with the same stack as ``ask``) and ``searchain serve-index``.

``serve`` loads the model, index and reader once, when the server starts; every question shares
them and runs under its own thread id (the graph keeps each run's checkpoints in memory until
the run is dropped; with ``--db FILE``, runs, events and checkpoints go to a SQLite file, and a
restarted server lists past runs and resumes the ones in flight; the file is checked, and locked
for this server alone, before the model loads). ``serve-index`` opens one index
and answers searches in the ColBERTv2 server protocol. Both listen on 127.0.0.1 unless told
otherwise, and warn when told otherwise; both answer only requests naming a ``Host`` they serve
(``--allow-host`` adds names), and what they say about themselves (``/healthz``, the page) names
no file path. ``serve`` beyond loopback always has a token.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from searchain_graph.cli.commands import build_graph

LOOPBACK = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "SEARCHAIN_SERVE_TOKEN"
"""The environment variable ``searchain serve`` reads its token from (a command line shows in ``ps``)."""


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def without_paths(text: str) -> str:
    """``text`` with every word that names an existing file or directory cut to its last part.

    What a server says about itself (``/healthz``, the page) reaches anyone who reaches the
    server: ``index /home/me/data/idx`` becomes ``index idx``. Hub names (``org/model``) and
    URLs, which name no local file, are kept.
    """
    words = []
    for word in text.split(" "):
        core = word.rstrip(";,)").lstrip("(")
        if ("/" in core or os.sep in core) and "://" not in core and Path(core).exists():
            word = word.replace(core, Path(core).name or core)
        words.append(word)
    return " ".join(words)


def _serve(args: argparse.Namespace, app: Any) -> int:
    """Run ``app`` on ``--host``/``--port`` until interrupted."""
    from searchain_graph.serve import ServerLimits, serve

    limits = ServerLimits(shutdown_grace_s=max(0.0, args.shutdown_grace))
    serve(app, host=args.host, port=args.port, log_level="warning" if args.quiet else "info", limits=limits)
    return 0


def _token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``$SEARCHAIN_SERVE_TOKEN``, else a new one when ``--host`` is not loopback (printed)."""
    from searchain_graph.serve.guard import check_token, is_loopback, new_token

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is not None:
        return check_token(token)
    if is_loopback(args.host):
        return None
    token = new_token()
    _say(f"the token (every request must carry it; set {TOKEN_ENV} to choose one): {token}")
    return token


def _check_server(args: argparse.Namespace, command: str, what: str) -> None:
    """The serve extra is installed, and a warning when the host is not this machine only."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        extra = 'pip install "searchain-graph[serve]"'
        raise ImportError(f"searchain {command} needs the serve extra: {extra} ({exc})") from exc
    if args.host not in LOOPBACK:
        _say(f"warning: listening on {args.host}: anyone who can reach it can {what}")


def run_serve(args: argparse.Namespace) -> int:
    """``searchain serve``: load the stack once, then serve the page until interrupted."""
    _check_server(args, "serve", "run questions on this machine")
    from langgraph.checkpoint.memory import InMemorySaver

    from searchain_graph.serve import create_app
    from searchain_graph.serve.db import open_run_store
    from searchain_graph.serve.guard import served_hosts

    token = _token(args)
    # Before the model: a --db that cannot be used (or that another server holds) stops here, in one line.
    store = open_run_store(args.db)
    try:
        graph, about = build_graph(args, _say, checkpointer=InMemorySaver(), max_batch_size=args.batch_size)
        concurrent = args.max_concurrent or args.batch_size
        hosts = served_hosts(args.host, args.allow_host)
        app = create_app(
            graph,
            about=without_paths(about),
            max_concurrent=concurrent,
            keep_runs=args.keep_runs,
            hosts=hosts,
            token=token,
            db=args.db,
            store=store,
        )
    except BaseException:
        store.close()
        raise
    _say(f"serving on http://{args.host}:{args.port}/ ({about})" + (" (the token is required)" if token else ""))
    return _serve(args, app)


def run_serve_index(args: argparse.Namespace) -> int:
    """``searchain serve-index``: open an index once, then answer ColBERTv2-protocol searches until interrupted."""
    _check_server(args, "serve-index", "query this index")
    from searchain_graph.ir.bm25.index import retain_freed_memory
    from searchain_graph.ir.index import load_index
    from searchain_graph.ir.index_dir import read_manifest
    from searchain_graph.serve.guard import served_hosts
    from searchain_graph.serve.index_server import create_index_app

    retain_freed_memory()  # a process that only answers searches: keep query buffers between requests
    manifest = read_manifest(args.index)
    about = f"{manifest.get('retriever')} index ({manifest.get('passages'):,} passages)"
    hosts = served_hosts(args.host, args.allow_host)
    app = create_index_app(load_index(args.index), about=about, max_concurrent=args.max_concurrent, hosts=hosts)
    where = f"http://{args.host}:{args.port}/"
    _say(f"serving {about} from {args.index} on {where} (ColBERTv2 protocol: /?query=...&k=...)")
    return _serve(args, app)


def run_model_dir(args: argparse.Namespace) -> int:
    """``searchain model-dir``: print a local model's plain-weights directory, for a model server to load."""
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.llms.loading import is_local_path, load_chat_model
    from searchain_graph.llms.packaged import PACKAGED_MODELS
    from searchain_graph.llms.weights import plain_weights_dir

    local = args.model == "smollm2" or args.model in PACKAGED_MODELS or is_local_path(args.model)
    llm = load_chat_model(args.model) if local else None
    if not isinstance(llm, TransformersChatModel):
        raise ValueError(f"--model {args.model!r} is not a local model: a server loads it by its own name")
    print(plain_weights_dir(llm.model_path, llm.gguf_file))
    return 0
