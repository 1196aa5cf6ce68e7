"""Review IR's corrections through a LangGraph server, as LangGraph Studio does.

``langgraph dev`` (``langgraph.json``) serves ``searchain_review``: SearChain pausing before each
correction with an ``interrupt()``. Studio shows the thread as *interrupted*, with the interrupt's
payload (the node, the LLM's answer, *g*, *f* against θ and the passage), and its "Resume" sends a
``Command(resume=...)``. This client does the same over the API with ``langgraph_sdk``: it runs the
question until the pause, prints the payload and resumes with the decision given.

    SEARCHAIN_MODEL=import:tests.fakes:serve_llm SEARCHAIN_CORPUS=examples/data/searchain_demo.jsonl \\
        PYTHONPATH=. langgraph dev --no-browser --no-reload --port 2125
    python examples/langgraph_review_client.py --url http://127.0.0.1:2125 --decision reject

(``import:tests.fakes:serve_llm`` is the test suite's rule-based LLM, whose first chain the bundled
reader corrects; leave SEARCHAIN_MODEL unset for the default LLM.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from langgraph_sdk import get_client

QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"


async def review(url: str, question: str, decision: Any) -> dict[str, Any]:
    """Run ``question`` on ``searchain_review`` until it pauses, then resume with ``decision``.

    Returns:
        The run's final output (``answer``, ``tree``...), after every pause was answered alike.
    """
    client = get_client(url=url)
    thread = (await client.threads.create())["thread_id"]
    out = await client.runs.wait(thread, "searchain_review", input={"question": question})
    while True:
        state = await client.threads.get_state(thread)
        pauses = [i for task in state["tasks"] for i in task.get("interrupts", [])]
        if not pauses:
            return dict(out) if isinstance(out, dict) else {}
        status = (await client.threads.get(thread))["status"]
        print(f"thread {thread} is {status}, before {state['next']}; the interrupt's payload:")
        print(json.dumps(pauses[0]["value"], ensure_ascii=False, indent=2))
        print(f"resuming with {decision!r}")
        out = await client.runs.wait(thread, "searchain_review", command={"resume": decision})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:2024")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--decision", default="accept", choices=["accept", "reject", "edit"])
    parser.add_argument("--answer", default=None, help="with --decision edit: the answer the node takes")
    args = parser.parse_args()
    decision: Any = {"decision": "edit", "answer": args.answer} if args.decision == "edit" else args.decision
    out = asyncio.run(review(args.url, args.question, decision))
    decided = [c for branch in out.get("tree", []) for c in branch["checks"] if c.get("decided_by")]
    print("answer:", out.get("answer"), "| rounds:", out.get("rounds"))
    for check in decided:
        print(f"node {check['node']}: {check['action']}, decided by {check['decided_by']} {check.get('review')}")


if __name__ == "__main__":
    main()
