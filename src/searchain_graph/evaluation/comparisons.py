"""The report's comparisons of methods: paired differences, IR's changes, demonstration copying.

Each function renders one section of :func:`~searchain_graph.evaluation.report.render_report` from
evaluation records (one per question and method):

* :func:`paired_section`: SearChain minus every other method on the questions both answered, in
  cover-EM points, with a 95% bootstrap interval and McNemar's exact p
  (:mod:`~searchain_graph.evaluation.significance`);
* :func:`changes_section`: on the questions where IR changed the final path (S_IR), whether the
  change helped, misled or did nothing, against SearChain w/o IR on the same question;
* :func:`copying_section`: answers and chains that name an entity of the method's demonstrations
  (its record's ``demonstration_names``) for a question not about it;
* :func:`repairs_section`: how often each repair of a chain fired (the warnings the graph
  records: a loop ended, a cut node dropped, an answer that says it is unknown, no node at all,
  a pending feedback at ``max_rounds``);
* :func:`reverts_section`: how often a later round repeated a node IR had changed with the answer
  IR rejected (:func:`reverted_nodes`): the LLM took the correction back;
* :func:`misses_section`: where each wrong SearChain answer lost the gold answer, from its tree
  and the gold supporting paragraphs (:func:`where_lost`).

IR's changes judged node by node, and the reader's *f* against θ, are in
:mod:`~searchain_graph.evaluation.node_judges`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from searchain_graph.evaluation.methods import METHODS
from searchain_graph.evaluation.significance import PairedDifference, paired_difference
from searchain_graph.method.adaptations.chain_repair import copied_names
from searchain_graph.method.parsing import answer_contains, normalize_answer

__all__ = [
    "IR_CHANGED",
    "REPAIRS",
    "branches",
    "reading",
    "chain_text",
    "kept",
    "changes_section",
    "copies",
    "copying_section",
    "correct",
    "intervened",
    "LOSSES",
    "misses_section",
    "paired_section",
    "restated",
    "restated_section",
    "repairs_section",
    "repairs_of",
    "reverted_nodes",
    "reverts_section",
    "section",
    "share",
    "where_lost",
]

REPAIRS: dict[str, str] = {
    "loop ended": "a loop; the chain ends at node",
    "cut node dropped": "cut by the token budget; its last node",
    "unknown answer -> unsolved": "says it is unknown; treated as unsolved",
    "no node: question completed": "the question itself is completed by IR",
    "copied node -> unsolved": "names the worked example's",
    "copied tracing -> composed": "the tracing output repeats the worked example",
    "stopped at max_rounds": "stopped at max_rounds=",
}
"""Each repair of a chain, and the words of the warning the graph records when it fires."""


def section(title: str, rows: Sequence[str], *head: str) -> list[str]:
    """A report section: a blank line, the ``##`` title, ``head`` (notes, a blank, the table's header), the rows.

    No rows, no section.
    """
    return ["", title, "", *head, *rows] if rows else []


IR_CHANGED = ("corrected", "completed")
"""The sources of a path node that IR changed (``Reference.source``)."""


def share(count: int, total: int) -> str:
    """``count`` and its share of ``total``, as the report's cells write them: ``"4 (28.6%)"``."""
    return f"{count} ({100 * count / total:.1f}%)"


def correct(record: dict[str, Any]) -> bool:
    """The record's answer is right by cover-EM (an errored record is wrong)."""
    return bool(record.get("metrics", {}).get("cover_em", 0.0) >= 1.0)


def intervened(record: dict[str, Any]) -> bool:
    """IR corrected or completed a node on this SearChain answer's final path."""
    return any(source in IR_CHANGED for source in record.get("sources", []))


def reading(diff: PairedDifference) -> str:
    """What a paired difference supports: a lead only when the interval excludes 0 and McNemar's p < 0.05.

    With few discordant pairs the percentile bootstrap interval is too narrow (4 against 0 of 15
    questions: interval [+6.7, +46.7], exact p = 0.125), so both must agree.
    """
    if diff.excludes_zero and diff.p_value < 0.05:
        return "SearChain ahead" if diff.difference > 0 else "SearChain behind"
    return "within noise"


def paired_section(records: Sequence[dict[str, Any]], datasets: Sequence[str], methods: Sequence[str]) -> list[str]:
    """SearChain minus each other method, per dataset, on the questions both answered."""
    outcome = {(r["dataset"], r["method"], r["qid"]): correct(r) for r in records}
    rows = []
    for dataset in datasets:
        for other in methods:
            if other == "searchain":
                continue
            qids = sorted(
                q for d, m, q in outcome if d == dataset and m == "searchain" and (dataset, other, q) in outcome
            )
            if not qids:
                continue
            diff = paired_difference(
                [outcome[(dataset, "searchain", q)] for q in qids], [outcome[(dataset, other, q)] for q in qids]
            )
            verdict = reading(diff)
            rows.append(
                f"| {dataset} | {other} | {diff.questions} | {diff.difference:+.1f} | "
                f"[{diff.low:+.1f}, {diff.high:+.1f}] | {diff.a_only} / {diff.b_only} | {diff.p_value:.3g} | "
                f"{verdict} |"
            )
    return section(
        "## Paired differences: SearChain minus each method (cover-EM points, same questions)",
        rows,
        "95% bootstrap interval over questions (10,000 resamples); McNemar's exact p on the discordant pairs "
        "(SearChain right and the other wrong / the reverse). A claim needs both: an interval that excludes 0 "
        "and p < 0.05 (with few discordant pairs the bootstrap interval alone is too narrow).",
        "",
        "| dataset | against | questions | difference | 95% interval | discordant | McNemar p | reading |",
        "|---|---|---:|---:|---|---:|---:|---|",
    )


def changes_section(
    searchain: Sequence[dict[str, Any]], no_ir: dict[tuple[str, str], dict[str, Any]], datasets: Sequence[str]
) -> list[str]:
    """On S_IR, whether IR's change of the final path helped, misled or did nothing to the answer."""
    rows = []
    for dataset in datasets:
        pairs = [
            (r, no_ir[(dataset, r["qid"])])
            for r in searchain
            if r["dataset"] == dataset and intervened(r) and (dataset, r["qid"]) in no_ir
        ]
        if not pairs:
            continue
        helps = sum(1 for r, n in pairs if correct(r) and not correct(n))
        misleads = sum(1 for r, n in pairs if not correct(r) and correct(n))
        neutral = len(pairs) - helps - misleads
        nodes = sum(1 for r, _ in pairs for s in r.get("sources", []) if s in IR_CHANGED)
        cells = [share(k, len(pairs)) for k in (helps, misleads, neutral)]
        rows.append(f"| {dataset} | {len(pairs)} | {nodes} | " + " | ".join(cells) + " |")
    return section(
        "## IR's changes: helps, misleads, neutral (questions of S_IR against SearChain w/o IR)",
        rows,
        "| dataset | S_IR | nodes IR changed | helps | misleads | neutral |",
        "|---|---:|---:|---:|---:|---:|",
    )


def branches(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The rounds of a record's Tree-of-Reasoning that hold a chain (an empty list for a record without one)."""
    return [b for b in (record.get("tree") or {}).get("tree") or [] if "nodes" in b]


def chain_text(record: dict[str, Any]) -> str:
    """Every chain the LLM wrote for a record: each round's answers and final content, else its final content.

    A SearChain record's tree keeps each round's nodes and ``[Final Content]`` (the traced answer
    is not part of a chain); a record without a tree (SearChain w/o IR) is its one reply.
    """
    rounds = branches(record)
    if not rounds:
        return str(record.get("final_content") or "")
    said = [str(n.get("answer") or "") for b in rounds for n in b.get("nodes") or []]
    said += [str(b.get("final_content") or "") for b in rounds]
    return "\n".join(s for s in said if s)


def kept(record: dict[str, Any], key: str) -> Any:
    """The verdict ``key`` a record without the dataset's text was written with; ``None`` for a record with it.

    A record without text (:func:`~searchain_graph.evaluation.harness.without_text`) has no
    question: what the report would read off its text was worked out while the text was at hand,
    and kept. A record with its text is judged afresh.
    """
    return None if "question" in record else record.get(key)


def copies(record: dict[str, Any], names: Sequence[str]) -> dict[str, list[str]]:
    """The demonstration ``names`` a record's answer and its chains say, for a question not about them.

    A record without text (:func:`~searchain_graph.evaluation.harness.without_text`) keeps what
    it was written with, as ``copied``.
    """
    if (copied := kept(record, "copied")) is not None:
        return dict(copied)
    question = str(record.get("question") or "")
    return {
        "answer": copied_names(record.get("prediction"), question, names),
        "chain": copied_names(chain_text(record), question, names),
    }


def copying_section(records: Sequence[dict[str, Any]], methods: Sequence[str]) -> list[str]:
    """Answers and chains naming a demonstration's entity for a question not about it."""
    rows = []
    for method in methods:
        spec = METHODS.get(method)
        names = spec.demonstration_names if spec else ()
        rs = [r for r in records if r["method"] == method]
        if not names or not rs:
            continue
        found = [copies(r, names) for r in rs]
        answers = sum(1 for f in found if f["answer"])
        chains = [f["chain"] for f in found]
        seen = sorted({n for copied in chains for n in copied})
        copying = sum(1 for copied in chains if copied)
        names_seen = ", ".join(seen) or "–"
        rows.append(f"| {method} | {len(rs)} | {share(answers, len(rs))} | {share(copying, len(rs))} | {names_seen} |")
    return section(
        "## Demonstration copying (an entity of the prompt's worked examples, for a question not about it)",
        rows,
        "| method | answers | answer copies | chain copies | names copied |",
        "|---|---:|---:|---:|---|",
    )


def repairs_of(record: dict[str, Any]) -> dict[str, int]:
    """How many times each repair of :data:`REPAIRS` fired on a record (those that did not are left out).

    Counted from the record's warnings; a record without text
    (:func:`~searchain_graph.evaluation.harness.without_text`) keeps the counts, as ``repairs``.
    """
    if (repairs := kept(record, "repairs")) is not None:
        return dict(repairs)
    warnings = [str(w) for w in record.get("warnings") or []]
    counts = {kind: sum(1 for w in warnings if words in w) for kind, words in REPAIRS.items()}
    return {kind: n for kind, n in counts.items() if n}


def repairs_section(records: Sequence[dict[str, Any]], methods: Sequence[str]) -> list[str]:
    """Per method with chain repairs, the questions on which each fired and how many times in all."""
    rows = []
    for method in methods:
        rs = [r for r in records if r["method"] == method]
        fired = [repairs_of(r) for r in rs]
        counts = {kind: [of_record.get(kind, 0) for of_record in fired] for kind in REPAIRS}
        if not rs or not any(any(c) for c in counts.values()):
            continue
        cells = [f"{sum(1 for c in counts[k] if c)} ({sum(counts[k])})" for k in REPAIRS]
        rows.append(f"| {method} | {len(rs)} | " + " | ".join(cells) + " |")
    return section(
        "## Chain repairs: questions on which each fired (times in all)",
        rows,
        "| method | questions | " + " | ".join(REPAIRS) + " |",
        "|---|---:|" + "---:|" * len(REPAIRS),
    )


def restated(record: dict[str, Any]) -> bool:
    """Right by cover-EM only on a gold answer the question itself states (and not an exact match).

    MuSiQue's aliases include "Batman" for a question about *Batman: Under the Red Hood*, so the
    prediction "Batman Under the Red Hood", the question's own title, is covered. A comparison
    question ("Who is older, A or B?") names its answer by design: these are listed, not removed.
    """
    if (verdict := kept(record, "restated")) is not None:
        return bool(verdict)
    prediction, question = str(record.get("prediction") or ""), str(record.get("question") or "")
    if not correct(record) or record.get("metrics", {}).get("em", 0.0) >= 1.0:
        return False
    found = [g for g in record.get("answers") or [] if isinstance(g, str) and answer_contains(prediction, g)]
    return bool(found) and all(answer_contains(question, g) for g in found)


def restated_section(records: Sequence[dict[str, Any]], datasets: Sequence[str], methods: Sequence[str]) -> list[str]:
    """Per dataset and method, the cover-EM hits on words of the question, and cover-EM without them."""
    rows = []
    for dataset in datasets:
        for method in methods:
            rs = [r for r in records if r["dataset"] == dataset and r["method"] == method]
            hits = [r for r in rs if restated(r)]
            if hits:
                right = sum(1 for r in rs if correct(r))
                examples = "; ".join(f"{r.get('prediction')!s:.60}" for r in hits[:3])
                rows.append(
                    f"| {dataset} | {method} | {right} | {len(hits)} | "
                    f"{100 * (right - len(hits)) / len(rs):.1f} | {examples} |"
                )
    return section(
        "## Right by cover-EM on words of the question",
        rows,
        "Cover-EM hits (EM 0) whose gold answer the question itself states: a prediction that restates",
        "the question can be covered. Comparison questions name their answer by design, so these are",
        "shown, not removed; cover-EM without them beside.",
        "",
        "| dataset | method | right | on the question's words | cover-EM % without them | predictions |",
        "|---|---|---:|---:|---:|---|",
    )


def _words(text: Any) -> set[str]:
    return set(normalize_answer(str(text or "")).split())


def reverted_nodes(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes of later rounds that repeat a node IR corrected or completed, with IR's answer dropped.

    A repeated query is a duplicate (the tree names the node it repeats), so IR does not check it
    again and *R* keeps IR's answer; but the LLM's chain goes on from its own answer, and the nodes
    it writes next build on it ("Who directed X?" corrected to Bill Condon, repeated in round 3 as
    "Stephenie Meyer", then "When was Stephenie Meyer born?"). A repeat drops IR's answer when none
    of the words of *g* beyond the query's own appear in the LLM's answer ("1970" keeps "October 8,
    1970"; "Jennifer Lopez" drops "Sela Ward"). A *g* with no words beyond its query's is never
    counted.

    Returns:
        One dict per such node: ``round``, ``query``, ``ir_answer`` (the *g* sent back) and ``answer``
        (the LLM's answer in the repeat).
    """
    sent: dict[tuple[Any, Any], str] = {}
    found = []
    for branch in branches(record):
        answers = {n.get("index"): n.get("answer") for n in branch.get("nodes") or []}
        for check in branch.get("checks") or []:
            if check.get("action") in ("correction", "completion") and check.get("reader_answer"):
                sent[(branch.get("round"), check.get("node"))] = str(check["reader_answer"])
            elif check.get("action") == "duplicate":
                first = check.get("duplicate_of") or {}
                g = sent.get((first.get("round"), first.get("node")))
                if g is None:
                    continue
                beyond = _words(g) - _words(check.get("query"))
                answer = answers.get(check.get("node"))
                if beyond and not beyond & _words(answer):
                    found.append(
                        {
                            "round": branch.get("round"),
                            "query": check.get("query"),
                            "ir_answer": g,
                            "answer": answer or "",
                        }
                    )
    return found


def reverts_section(records: Sequence[dict[str, Any]], methods: Sequence[str]) -> list[str]:
    """Per method with trees, how often a later round repeated an IR-changed node with IR's answer dropped."""
    rows = []
    for method in methods:
        rs = [r for r in records if r["method"] == method and branches(r)]
        if not any(c.get("action") == "duplicate" for r in rs for b in branches(r) for c in b.get("checks") or []):
            continue  # no round repeated a node: nothing can have been taken back
        taken = [len(reverted_nodes(r)) for r in rs]
        hit = [correct(r) for r, n in zip(rs, taken, strict=True) if n]
        rest = [correct(r) for r, n in zip(rs, taken, strict=True) if not n]
        right = " | ".join(share(sum(group), len(group)) if group else "–" for group in (hit, rest))
        rows.append(f"| {method} | {len(rs)} | {sum(taken)} | {share(len(hit), len(rs))} | {right} |")
    return section(
        "## Corrections the LLM took back (a later round repeats the node with the answer IR rejected)",
        rows,
        "A repeated node is not checked again and *R* keeps IR's answer, but the chain's next nodes build on the "
        "LLM's own answer (`reverted_nodes`).",
        "",
        "| method | questions | nodes taken back | questions with one | right, those | right, the rest |",
        "|---|---:|---:|---:|---:|---:|",
    )


LOSSES: dict[str, str] = {
    "in the chain, lost after": "a node's answer, or a g IR sent back, holds the gold answer; the final "
    "answer does not",
    "read, under θ": "IR read the paragraph that holds the answer and g is the answer, with f <= θ: the LLM's "
    "answer stood",
    "read, reader missed": "IR read the paragraph that holds the answer; the reader's g is something else",
    "never read": "no passage IR read is the supporting paragraph that holds the answer",
    "no paragraph holds it": "no gold supporting paragraph contains the gold answer's words (yes/no, other wording)",
}
"""Where a wrong SearChain answer lost the gold answer (:func:`where_lost`), furthest stage first."""


def where_lost(record: dict[str, Any]) -> str:
    """The furthest stage a wrong SearChain answer's gold answer reached, as a key of :data:`LOSSES`.

    The answer's paragraphs are the gold supporting paragraphs whose text contains a gold answer
    (:func:`~searchain_graph.method.parsing.answer_contains`). Every node of every round counts, so
    an answer reached in round 1 and rewritten in round 2 is "in the chain, lost after".
    """
    if (stage := kept(record, "where_lost")) is not None:
        return str(stage)
    golds = [str(a) for a in record.get("answers") or [] if str(a).strip()]

    def holds(text: Any) -> bool:
        return bool(text) and any(answer_contains(str(text), g) for g in golds)

    rounds = branches(record)
    checks = [c for b in rounds for c in b.get("checks") or []]
    said = [n.get("answer") for b in rounds for n in b.get("nodes") or []]
    sent = [c.get("reader_answer") for c in checks if c.get("action") in ("correction", "completion")]
    if any(holds(text) for text in said + sent):
        return "in the chain, lost after"
    paragraphs = {g["title"] for g in record.get("supporting") or [] if holds(g.get("text"))}
    if not paragraphs:
        return "no paragraph holds it"
    read = [c for c in checks if ((c.get("passage") or {}).get("title")) in paragraphs]
    if any(holds(c.get("reader_answer")) for c in read):
        return "read, under θ"
    return "read, reader missed" if read else "never read"


def misses_section(records: Sequence[dict[str, Any]], datasets: Sequence[str]) -> list[str]:
    """Per dataset, SearChain's wrong answers (records with gold paragraphs) by where they lost the answer."""
    rows = []
    for dataset in datasets:
        wrong = [
            where_lost(r)
            for r in records
            if r["method"] == "searchain"
            and r["dataset"] == dataset
            and (r.get("supporting") or "where_lost" in r)
            and not correct(r)
        ]
        if wrong:
            cells = [share(wrong.count(k), len(wrong)) for k in LOSSES]
            rows.append(f"| {dataset} | {len(wrong)} | " + " | ".join(cells) + " |")
    return section(
        "## Where SearChain's wrong answers lost the gold answer",
        rows,
        *[f"* {k}: {v}." for k, v in LOSSES.items()],
        "",
        "| dataset | wrong answers | " + " | ".join(LOSSES) + " |",
        "|---|---:|" + "---:|" * len(LOSSES),
    )
