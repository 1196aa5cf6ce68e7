"""SearChain inside a LangChain app: the default offline stack, or any chat model you pass.

Run:  python examples/quickstart.py            (Qwen2.5-Coder-1.5B, offline)
      OPENAI_API_KEY=... python examples/quickstart.py   (ChatOpenAI)
"""

from __future__ import annotations

from searchain_graph import BM25Retriever, BundledReader, Context, create_searchain_graph, demo_corpus, load_chat_model


def main() -> None:
    llm = load_chat_model()  # ChatOpenAI when OPENAI_API_KEY is set, else Qwen2.5-Coder-1.5B
    retriever = BM25Retriever.from_files(demo_corpus())  # the passages shipped in the package
    # The reader shipped in the package (offline); θ is its calibrated one unless you pass confidence_threshold.
    graph = create_searchain_graph(llm, retriever, BundledReader(), max_rounds=5)

    question = "Where was the performer of Spirit If... born?"
    # Each round shows up as it happens.
    for update in graph.stream({"question": question}, stream_mode="updates", context=Context(max_rounds=3)):
        for node, delta in update.items():
            if node == "coq_generation":
                print(f"round {delta['rounds']}: {len(delta['chain'])} nodes")
            elif node == "ir_check":
                for check in delta["tree"][-1]["checks"]:
                    print(f"  node {check['node']}: {check['action']} (g={check['reader_answer']!r})")

    out = graph.invoke({"question": question})
    print("\nanswer:", out["answer"])
    print(out["final_content"])
    for ref in out["references"]:
        doc = ref["document"] or {"metadata": {}}
        print(f"[{ref['index']}] {ref['source']:9} {ref['query']} -> {ref['answer']}  ({doc['metadata'].get('title')})")


if __name__ == "__main__":
    main()
