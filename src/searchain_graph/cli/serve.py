"""``searchain serve``: the local web app (:mod:`searchain_graph.serve`) with the same stack as ``ask``.

The model, index and reader are loaded once, when the server starts; every question shares
them and runs under its own thread id (the graph keeps each run's checkpoints in memory until
the run is dropped). It listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import sys

from searchain_graph.cli.commands import build_graph

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def run_serve(args: argparse.Namespace) -> int:
    """``searchain serve``: load the stack once, then serve the page until interrupted."""
    try:
        from langgraph.checkpoint.memory import InMemorySaver

        from searchain_graph.serve import create_app, serve
    except ImportError as exc:
        extra = 'pip install "searchain-graph[serve]"'
        raise ImportError(f"searchain serve needs the serve extra: {extra} ({exc})") from exc

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.host not in LOOPBACK:
        say(f"warning: listening on {args.host}: anyone who can reach it can run questions on this machine")
    graph, about = build_graph(args, say, checkpointer=InMemorySaver(), max_batch_size=args.batch_size)
    app = create_app(
        graph,
        about=about,
        max_concurrent=args.max_concurrent or args.batch_size,
        keep_runs=args.keep_runs,
    )
    say(f"serving on http://{args.host}:{args.port}/ ({about})")
    serve(app, host=args.host, port=args.port, log_level="warning" if args.quiet else "info")
    return 0
