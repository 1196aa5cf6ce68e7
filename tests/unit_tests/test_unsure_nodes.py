"""``benchmarks/unsure_nodes.py``: which questions a rule for the nodes the reader is unsure of could change."""

from __future__ import annotations

from typing import Any

from tests.helpers import script_module


def _module() -> Any:
    return script_module("benchmarks/unsure_nodes.py")


def _ref(answer: str, title: str, confidence: float, g: str, source: str = "llm") -> dict[str, Any]:
    return {
        "answer": answer,
        "source": source,
        "confidence": confidence,
        "reader_answer": g,
        "document": {"page_content": "cut…", "metadata": {"title": title}},
    }


PARAGRAPHS = {
    "Fyre Festival": "The Fyre Festival was to take place on the Bahamian island of Great Exuma.",
    "Billy McFarland": "McFarland was charged with wire fraud in Manhattan federal court.",
}


def test_a_node_under_theta_whose_passage_lacks_its_answer_counts_with_what_the_passage_holds() -> None:
    unsure = _module()
    record = {
        "answers": ["Great Exuma"],
        "tree": {
            "references": [
                _ref("Manhattan federal court", "Billy McFarland", 7.5, "Manhattan federal court"),
                _ref("Miami, Florida", "Fyre Festival", 1.2, "Bahamian island"),
            ]
        },
    }
    # The whole paragraph is read from the dataset, not the record's snippet: it holds the gold answer.
    assert unsure.classify(record, PARAGRAPHS, 4.36) == {"all", "under", "lacks", "passage_gold"}
    # Above θ the node was checked, so no rule for unsure nodes applies.
    assert unsure.classify(record, PARAGRAPHS, 1.0) == {"all"}


def test_a_supported_or_corrected_node_is_not_acted_on() -> None:
    unsure = _module()
    supported = {
        "answers": ["Great Exuma"],
        "tree": {"references": [_ref("Great Exuma.", "Fyre Festival", 2.0, "Great Exuma")]},
    }
    assert unsure.classify(supported, PARAGRAPHS, 4.36) == {"all", "under"}
    corrected = {
        "answers": ["x"],
        "tree": {"references": [_ref("Rome", "Fyre Festival", 2.0, "Rome", source="corrected")]},
    }
    assert unsure.classify(corrected, PARAGRAPHS, 4.36) == {"all"}
    assert unsure.word_share("Great Exuma island", "the island, Great Exuma") == 1.0
    assert unsure.word_share("Great Exuma", "Miami, Florida") == 0.0
