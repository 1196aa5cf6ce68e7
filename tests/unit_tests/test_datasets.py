"""Dataset loaders: the shared samples when present, and small hand-made files in every format."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, detect_dataset, iter_dataset, load_dataset
from searchain_graph.evaluation.datasets import DATASETS, DatasetFormatError, Example
from searchain_graph.ir.corpus import iter_corpus, paragraph_id

SHARED = Path(os.environ.get("SEARCHAIN_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared data not found at {SHARED} (set SEARCHAIN_SHARED_DATA)"
)

SAMPLES = [
    ("hotpotqa", "hotpotqa/ircot_dev_subsampled.first200.jsonl", 200, "multihop"),
    ("musique", "musique/musique_ans_dev.sample100.jsonl", 100, "multihop"),
    ("2wikimultihopqa", "2wikimultihopqa/dev.sample100.jsonl", 100, "multihop"),
    ("strategyqa", "strategyqa/strategyqa.sample100.jsonl", 100, "yesno"),
    ("bamboogle", "bamboogle/bamboogle.json", 125, "multihop"),
]


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _check_example(example: Example, dataset: str, task: str) -> None:
    assert example["dataset"] == dataset
    assert example["task"] == task
    assert example["qid"] and isinstance(example["qid"], str)
    assert example["question"] and example["question"] == " ".join(example["question"].split())
    assert example["answers"] and all(a and a == " ".join(a.split()) for a in example["answers"])
    assert len(example["answers"]) == len(set(example["answers"]))
    json.dumps(example)  # plain JSON data throughout


# --- the shared samples ------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize(("dataset", "relpath", "count", "task"), SAMPLES)
def test_shared_samples_load(dataset: str, relpath: str, count: int, task: str) -> None:
    path = SHARED / relpath
    examples = load_dataset(dataset, path)
    assert len(examples) == count
    assert detect_dataset(path) == dataset
    assert len({e["qid"] for e in examples}) == count
    for example in examples:
        _check_example(example, dataset, task)
    assert load_dataset(dataset, path, limit=3) == examples[:3]


@needs_shared
def test_shared_hotpotqa() -> None:
    examples = load_dataset("hotpot", SHARED / SAMPLES[0][1])
    assert all(e["hops"] == 2 and len(e["paragraphs"]) == 10 for e in examples)
    assert all(sum(p["is_supporting"] for p in e["paragraphs"]) == 2 for e in examples)
    assert examples[0]["answers"] == ["Chief of Protocol"]


@needs_shared
def test_shared_musique_decompositions_are_resolved() -> None:
    examples = load_dataset("MuSiQue", SHARED / SAMPLES[1][1])
    first = examples[0]
    assert first["qid"] == "2hop__574419_270105"
    assert first["decomposition"] == [
        {
            "question": "What is the located in the administrative territorial entity of Van Hook Township?",
            "answer": "Mountrail County",
        },
        {"question": "What is the capital of Mountrail County?", "answer": "Stanley"},
    ]
    for example in examples:
        steps = example["decomposition"]
        assert steps is not None and example["hops"] == len(steps)
        assert not any(re.search(r"#\d", s["question"]) or ">>" in s["question"] for s in steps)
        assert steps[-1]["answer"] in example["answers"]  # the last step answers the question
    assert sum(len(e["answers"]) > 1 for e in examples) == 34  # questions with aliases in the sample


@needs_shared
def test_shared_2wiki_hops_follow_type() -> None:
    examples = load_dataset("2WIKI", SHARED / SAMPLES[2][1])
    for example in examples:
        expected = 4 if example["meta"]["type"] == "bridge_comparison" else 2
        assert example["hops"] == expected


@needs_shared
def test_shared_strategyqa_and_bamboogle() -> None:
    strategy = load_dataset("strategyqa", SHARED / SAMPLES[3][1])
    assert {a for e in strategy for a in e["answers"]} == {"yes", "no"}
    assert all(e["hops"] == len(e["decomposition"] or []) for e in strategy)
    bamboogle = load_dataset("bamboogle", SHARED / SAMPLES[4][1])
    assert bamboogle[0]["qid"] == "bamboogle-1"
    assert all(e["hops"] == 2 and len(e["decomposition"] or []) == 2 for e in bamboogle)


@needs_shared
@pytest.mark.parametrize(("dataset", "relpath"), [(d, p) for d, p, _, _ in SAMPLES[:3]])
def test_shared_corpus_matches_searchain_index(dataset: str, relpath: str) -> None:
    path = SHARED / relpath
    docs = corpus_paragraphs(load_dataset(dataset, path))
    indexed = list(iter_corpus(path))
    assert [(d.metadata, d.page_content) for d in docs] == [(d.metadata, d.page_content) for d in indexed]
    assert len({d.metadata["id"] for d in docs}) == len(docs)


# --- hand-made files in every format -----------------------------------------------------------


HOTPOT_RAW = [
    {
        "_id": "h1",
        "question": "Which city is the  Toronto Coach Terminal in?",
        "answer": "Toronto",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Toronto Coach Terminal", 0]],
        "context": [
            ["Toronto Coach Terminal", [" The Toronto Coach Terminal is a bus station. ", "It is in  Toronto."]],
            ["Kevin Drew", ["Kevin Drew was born in Toronto."]],
        ],
    },
    {
        "_id": "h2",
        "question": "Who was born in Toronto?",
        "answer": "Kevin Drew",
        "type": "comparison",
        "level": "hard",
        "supporting_facts": [["Kevin Drew", 0]],
        "context": [["Kevin Drew", ["Kevin Drew was born in Toronto."]], ["Empty", []]],
    },
]


def test_hotpotqa_raw_json_array(tmp_path: Path) -> None:
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(HOTPOT_RAW, indent=1), encoding="utf-8")
    examples = load_dataset("HotpotQA", path)
    first = examples[0]
    assert first["qid"] == "h1" and first["question"] == "Which city is the Toronto Coach Terminal in?"
    assert first["answers"] == ["Toronto"] and first["hops"] == 2 and first["task"] == "multihop"
    assert first["paragraphs"] == [
        {
            "title": "Toronto Coach Terminal",
            "text": "The Toronto Coach Terminal is a bus station. It is in Toronto.",
            "is_supporting": True,
        },
        {"title": "Kevin Drew", "text": "Kevin Drew was born in Toronto.", "is_supporting": False},
    ]
    assert first["meta"]["type"] == "bridge" and first["meta"]["level"] == "easy"
    assert first["decomposition"] is None
    assert detect_dataset(path) == "hotpotqa"
    # Corpus: "Kevin Drew" appears twice and the empty paragraph is dropped.
    docs = corpus_paragraphs(examples)
    assert [d.metadata["title"] for d in docs] == ["Toronto Coach Terminal", "Kevin Drew"]
    assert [d.metadata["id"] for d in docs] == [paragraph_id(d.metadata["title"], d.page_content) for d in docs]
    assert [d.metadata for d in docs] == [d.metadata for d in iter_corpus(path)]


def test_hotpotqa_ircot_jsonl(tmp_path: Path) -> None:
    record = {
        "question_id": "5a8",
        "question_text": "Where was the performer of Spirit If... born?",
        "answers_objects": [{"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Toronto"]}],
        "contexts": [
            {"id": "0", "title": "Spirit If...", "paragraph_text": "Spirit If... is an album.", "is_supporting": True},
            {"id": "1", "title": "Other", "paragraph_text": "Unrelated\ttext.", "is_supporting": False},
        ],
    }
    path = _jsonl(tmp_path / "ircot.jsonl", [record])
    (example,) = load_dataset("hotpot", path)
    assert example["qid"] == "5a8" and example["answers"] == ["Toronto"] and example["hops"] == 2
    assert [p["is_supporting"] for p in example["paragraphs"]] == [True, False]
    assert example["paragraphs"][1]["text"] == "Unrelated text."
    assert detect_dataset(path) == "hotpotqa"
    # IRCoT's MuSiQue files share the layout: the id prefix gives the dataset and the hops.
    path = _jsonl(tmp_path / "ircot_musique.jsonl", [{**record, "question_id": "3hop1__1_2_3"}])
    assert detect_dataset(path) == "musique"
    assert load_dataset("auto", path)[0]["hops"] == 3


MUSIQUE: dict[str, Any] = {
    "id": "3hop1__1_2_3",
    "question": "When was the spouse of the performer of Spirit If... born?",
    "answer": "1970",
    "answer_aliases": ["1970", "nineteen seventy", " 1970 "],
    "answerable": True,
    "paragraphs": [
        {"idx": 0, "title": "Spirit If...", "paragraph_text": "Spirit If... is by Kevin Drew.", "is_supporting": True},
        {"idx": 1, "title": "Kevin Drew", "paragraph_text": "Kevin Drew married Jane.", "is_supporting": True},
        {"idx": 2, "title": "Jane", "paragraph_text": "Jane was born in 1970.", "is_supporting": True},
    ],
    "question_decomposition": [
        {"id": 1, "question": "Spirit If... >> performer", "answer": "Kevin Drew", "paragraph_support_idx": 0},
        {"id": 2, "question": "Who is the spouse of #1?", "answer": "Jane", "paragraph_support_idx": 1},
        {"id": 3, "question": "When was #2 (wife of #1) born?", "answer": "1970", "paragraph_support_idx": 2},
    ],
}


def test_musique_resolves_references_and_dedupes_aliases(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "musique.jsonl", [MUSIQUE])
    (example,) = load_dataset("musique", path)
    assert example["answers"] == ["1970", "nineteen seventy"]
    assert example["hops"] == 3
    assert example["decomposition"] == [
        {"question": "What is the performer of Spirit If...?", "answer": "Kevin Drew"},
        {"question": "Who is the spouse of Kevin Drew?", "answer": "Jane"},
        {"question": "When was Jane (wife of Kevin Drew) born?", "answer": "1970"},
    ]
    assert example["meta"]["raw_decomposition"] == [s["question"] for s in MUSIQUE["question_decomposition"]]
    assert example["meta"]["paragraph_support_idx"] == [0, 1, 2]
    assert detect_dataset(path) == "musique"


def test_musique_forward_reference_is_an_error(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(MUSIQUE))
    bad["question_decomposition"][1]["question"] = "Who is the spouse of #3?"
    path = _jsonl(tmp_path / "musique.jsonl", [MUSIQUE | {"id": "ok"}, bad])
    with pytest.raises(DatasetFormatError, match=r"musique\.jsonl:2: .*#3"):
        load_dataset("musique", path)


def _twowiki(qid: str, kind: str, evidences: int) -> dict[str, Any]:
    return {
        "_id": qid,
        "type": kind,
        "question": f"Question {qid}?",
        "answer": "yes",
        "context": [["A", ["Sentence one.", "Sentence two."]], ["B", ["Other."]]],
        "supporting_facts": [["B", 0]],
        "evidences": [["A", "rel", "B"]] * evidences,
    }


def test_2wiki_hop_rule(tmp_path: Path) -> None:
    records = [
        _twowiki("c", "comparison", 3),  # the type wins over a redundant third evidence
        _twowiki("i", "inference", 2),
        _twowiki("k", "compositional", 2),
        _twowiki("b", "bridge_comparison", 5),
        _twowiki("u", "something_new", 3),  # unknown type: len(evidences)
        _twowiki("n", "something_new", 0),  # and nothing to count: unknown
    ]
    path = _jsonl(tmp_path / "dev.jsonl", records)
    examples = load_dataset("2wikimultihopqa", path)
    assert [e["hops"] for e in examples] == [2, 2, 2, 4, 3, None]
    assert examples[0]["paragraphs"][0]["text"] == "Sentence one. Sentence two."
    assert [p["is_supporting"] for p in examples[0]["paragraphs"]] == [False, True]
    assert examples[0]["answers"] == ["yes"] and examples[0]["task"] == "multihop"
    assert detect_dataset(path) == "2wikimultihopqa"
    # A JSON array works too, and the corpus is the union of the (identical) paragraphs.
    array = tmp_path / "dev.json"
    array.write_text(json.dumps(records), encoding="utf-8")
    assert load_dataset("2wiki", array) == examples
    docs = corpus_paragraphs(examples)
    assert len(docs) == 2
    assert [d.metadata for d in docs] == [d.metadata for d in iter_corpus(array)]


def test_strategyqa(tmp_path: Path) -> None:
    record = {
        "qid": "s1",
        "term": "Frost",
        "question": "Is it common to see frost during some college commencements?",
        "answer": True,
        "facts": ["Commencements are in December.", "Frost is common in December."],
        "decomposition": ["When are commencements?", "Is frost common in #1?"],
        "evidence": [[[["Frost-3"]], ["operation"]], [["no_evidence"], [["Commencement-1", "Frost-3"]]]],
    }
    path = _jsonl(tmp_path / "strategyqa.jsonl", [record, record | {"qid": "s2", "answer": False}])
    first, second = load_dataset("StrategyQA", path)
    assert first["answers"] == ["yes"] and second["answers"] == ["no"]
    assert first["task"] == "yesno" and first["hops"] == 2
    assert first["decomposition"] == [
        {"question": "When are commencements?", "answer": ""},
        {"question": "Is frost common in #1?", "answer": ""},
    ]
    assert first["meta"]["evidence_paragraphs"] == ["Frost-3", "Commencement-1"]
    assert first["paragraphs"] == [] and corpus_paragraphs([first]) == []
    assert detect_dataset(path) == "strategyqa"
    bad = _jsonl(tmp_path / "bad.jsonl", [record, record | {"qid": "s3", "answer": "yes"}])
    with pytest.raises(DatasetFormatError, match=r"bad\.jsonl:2: field 'answer' must be true or false"):
        load_dataset("strategyqa", bad)


def test_fever_and_kilt_fever(tmp_path: Path) -> None:
    records = [
        {
            "id": 75397,
            "verifiable": "VERIFIABLE",
            "label": "SUPPORTS",
            "claim": "Nikolaj Coster-Waldau worked with the Fox Broadcasting Company.",
            "evidence": [[[92206, 104971, "Nikolaj_Coster-Waldau", 7], [92206, 104971, "Fox_Broadcasting_Company", 0]]],
        },
        {"id": 150448, "label": "REFUTES", "claim": "Roman Atwood is a content creator.", "evidence": []},
        {"id": 3, "label": "not enough info", "claim": "Telemundo is a English-language network.", "evidence": []},
    ]
    path = _jsonl(tmp_path / "fever_dev.jsonl", records)
    examples = load_dataset("fever", path)
    assert [e["answers"] for e in examples] == [["SUPPORTS"], ["REFUTES"], ["NOT ENOUGH INFO"]]
    assert examples[0]["qid"] == "75397" and examples[0]["task"] == "fact" and examples[0]["hops"] is None
    assert examples[0]["meta"]["evidence_pages"] == ["Nikolaj_Coster-Waldau", "Fox_Broadcasting_Company"]
    assert detect_dataset(path) == "fever"
    kilt = _jsonl(
        tmp_path / "fever-dev-kilt.jsonl",
        [
            {
                "id": "k1",
                "input": "Aristotle spent time in Athens.",
                "output": [{"answer": "SUPPORTS", "provenance": []}],
            }
        ],
    )
    assert detect_dataset(kilt) == "fever"
    assert load_dataset("fever", kilt)[0]["answers"] == ["SUPPORTS"]
    bad = _jsonl(tmp_path / "bad.jsonl", [records[0], records[1] | {"label": "MAYBE"}])
    with pytest.raises(DatasetFormatError, match=r"bad\.jsonl:2: field 'label' must be one of"):
        load_dataset("fever", bad)


def test_eli5_kilt_and_hf_layouts(tmp_path: Path) -> None:
    kilt = _jsonl(
        tmp_path / "eli5-dev-kilt.jsonl",
        [
            {
                "id": "1oy5tc",
                "input": "Why do we feel cold when we have a fever?",
                "output": [
                    {"answer": "Your body raises its  set point."},
                    {"provenance": [{"wikipedia_id": "1"}]},
                    {"answer": "Because the hypothalamus..."},
                    {"answer": "Your body raises its set point."},
                ],
            }
        ],
    )
    (example,) = load_dataset("ELI5", kilt)
    assert example["answers"] == ["Your body raises its set point.", "Because the hypothalamus..."]
    assert example["task"] == "longform" and example["hops"] is None
    assert detect_dataset(kilt) == "eli5"
    hf = _jsonl(
        tmp_path / "eli5_hf.jsonl",
        [
            {
                "q_id": "8a1",
                "title": "Why is the sky blue?",
                "selftext": "",
                "subreddit": "explainlikeimfive",
                "answers": {"a_id": ["x", "y"], "text": ["Rayleigh scattering.", "Blue light scatters more."]},
            }
        ],
    )
    (example,) = load_dataset("eli5", hf)
    assert example["qid"] == "8a1" and example["question"] == "Why is the sky blue?"
    assert example["answers"] == ["Rayleigh scattering.", "Blue light scatters more."]
    assert detect_dataset(hf) == "eli5"
    empty = _jsonl(tmp_path / "empty.jsonl", [{"id": "e", "input": "Why?", "output": [{"provenance": []}]}])
    with pytest.raises(DatasetFormatError, match=r"empty\.jsonl:1: no gold answer"):
        load_dataset("eli5", empty)


BAMBOOGLE = [
    {
        "Question": "Who was president of the United States in the year that Citibank was founded?",
        "Answer": "james madison",
        "Q1": "What year was Citibank founded?",
        "A1": ["1812"],
        "Q2": "Who was president of the United States in 1812?",
        "A2": ["james madison"],
    },
    {
        "Question": "What rocket was the first spacecraft that ever approached Uranus launched on?",
        "Answer": "Titan IIIE",
        "Q1": "What was the first spacecraft that ever approached Uranus?",
        "A1": "voyager 2",
        "Q2": "What rocket was Voyager 2 launched on?",
        "A2": ["titan iiie-centaur", "titan iiie"],
    },
]


def test_bamboogle_json_jsonl_and_csv(tmp_path: Path) -> None:
    array = tmp_path / "bamboogle.json"
    array.write_text(json.dumps(BAMBOOGLE), encoding="utf-8")
    examples = load_dataset("bamboogle", array)
    assert [e["qid"] for e in examples] == ["bamboogle-1", "bamboogle-2"]
    second = examples[1]
    assert second["answers"] == ["Titan IIIE"] and second["hops"] == 2
    assert second["decomposition"] == [
        {"question": "What was the first spacecraft that ever approached Uranus?", "answer": "voyager 2"},
        {"question": "What rocket was Voyager 2 launched on?", "answer": "titan iiie-centaur"},
    ]
    assert second["meta"]["step_answers"] == [["voyager 2"], ["titan iiie-centaur", "titan iiie"]]
    assert detect_dataset(array) == "bamboogle"
    assert load_dataset("bamboogle", _jsonl(tmp_path / "bamboogle.jsonl", BAMBOOGLE)) == examples
    csv_path = tmp_path / "bamboogle.csv"
    csv_path.write_text(
        "Question,Answer,Q1,A1,Q2,A2\n"
        '"Who was president of the United States in the year that Citibank was founded?",james madison,'
        "What year was Citibank founded?,1812,Who was president of the United States in 1812?,james madison\n",
        encoding="utf-8",
    )
    (from_csv,) = load_dataset("bamboogle", csv_path)
    assert from_csv == examples[0]
    assert detect_dataset(csv_path) == "bamboogle"


# --- errors, names, limits ---------------------------------------------------------------------


def test_broken_lines_name_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(MUSIQUE)
    path = tmp_path / "broken.jsonl"
    path.write_text(good + "\n\n" + '{"id": "x", "question": \n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"broken\.jsonl:3: not valid JSON"):
        load_dataset("musique", path)
    # Streaming: the good record comes out before the broken line is reached.
    stream = iter_dataset("musique", path)
    assert next(stream)["qid"] == MUSIQUE["id"]
    with pytest.raises(DatasetFormatError):
        next(stream)
    no_question = _jsonl(tmp_path / "noq.jsonl", [MUSIQUE, {k: v for k, v in MUSIQUE.items() if k != "question"}])
    with pytest.raises(DatasetFormatError, match=r"noq\.jsonl:2: missing field 'question'"):
        load_dataset("musique", no_question)
    wrong_type = _jsonl(tmp_path / "type.jsonl", [MUSIQUE | {"answer": 1970}])
    with pytest.raises(DatasetFormatError, match=r"type\.jsonl:1: field 'answer' must be a string, got int"):
        load_dataset("musique", wrong_type)
    not_object = _jsonl(tmp_path / "list.jsonl", [[1, 2], MUSIQUE])  # JSONL, though it starts with "["
    with pytest.raises(DatasetFormatError, match=r"list\.jsonl:1: expected a JSON object, got list"):
        load_dataset("musique", not_object)
    single = _jsonl(tmp_path / "single.jsonl", [[1, 2]])  # a .jsonl file is always JSONL
    with pytest.raises(DatasetFormatError, match=r"single\.jsonl:1: expected a JSON object, got list"):
        load_dataset("musique", single)
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    with pytest.raises(DatasetFormatError, match=r"array\.json: record 1: expected a JSON object, got int"):
        load_dataset("musique", array)


def test_json_array_errors_name_the_record(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.json"
    bad = HOTPOT_RAW[1] | {"context": [["Kevin Drew", "not a list of sentences"]]}
    path.write_text(json.dumps([HOTPOT_RAW[0], bad]), encoding="utf-8")
    with pytest.raises(
        DatasetFormatError, match=r"hotpot\.json: record 2: context\[0\] must be \[title, \[sentences\]\]"
    ):
        load_dataset("hotpotqa", path)
    path.write_text('[{"_id": "h1",\n "question": }]', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"hotpot\.json:2: not valid JSON"):
        load_dataset("hotpotqa", path)
    path.write_text('{"_id": "h1"}', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"hotpot\.json: a JSON file must hold an array of records"):
        load_dataset("hotpotqa", path)  # one object, not an array


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "dup.jsonl", [MUSIQUE, MUSIQUE])
    with pytest.raises(DatasetFormatError, match=r"dup\.jsonl:2: question id '3hop1__1_2_3' already used at .*:1"):
        load_dataset("musique", path)


def test_names_limits_and_detection(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "m.jsonl", [MUSIQUE | {"id": f"q{i}"} for i in range(5)])
    assert [e["qid"] for e in load_dataset(" MUSIQUE ", path, limit=2)] == ["q0", "q1"]
    assert load_dataset("musique", path, limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        load_dataset("musique", path, limit=-1)
    with pytest.raises(ValueError, match="unknown dataset 'squad'"):
        load_dataset("squad", path)
    with pytest.raises(FileNotFoundError):
        load_dataset("musique", tmp_path / "missing.jsonl")
    unknown = _jsonl(tmp_path / "u.jsonl", [{"foo": 1}])
    with pytest.raises(DatasetFormatError, match=r"u\.jsonl:1: fields \(foo\) match no known dataset"):
        detect_dataset(unknown)
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="no records"):
        detect_dataset(empty)
    assert load_dataset("musique", empty) == []
    assert DATASETS == ("hotpotqa", "musique", "2wikimultihopqa", "strategyqa", "fever", "eli5", "bamboogle")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("hotpot", "hotpotqa"),
        ("HotpotQA", "hotpotqa"),
        ("2WIKI", "2wikimultihopqa"),
        ("2WikiMultihopQA", "2wikimultihopqa"),
    ],
)
def test_name_aliases(tmp_path: Path, name: str, canonical: str) -> None:
    record = HOTPOT_RAW[0] if canonical == "hotpotqa" else _twowiki("w", "comparison", 2)
    path = _jsonl(tmp_path / "d.jsonl", [record])
    assert load_dataset(name, path)[0]["dataset"] == canonical


def test_corpus_ids_match_index_for_every_paragraph_format(tmp_path: Path) -> None:
    files = [
        _jsonl(tmp_path / "musique.jsonl", [MUSIQUE, MUSIQUE | {"id": "again"}]),
        _jsonl(tmp_path / "hotpot.jsonl", HOTPOT_RAW),
        _jsonl(tmp_path / "wiki.jsonl", [_twowiki("a", "comparison", 2), _twowiki("b", "inference", 2)]),
    ]
    for path, name in zip(files, ["musique", "hotpotqa", "2wiki"], strict=True):
        docs = corpus_paragraphs(load_dataset(name, path))
        indexed = list(iter_corpus(path))
        assert [(d.page_content, d.metadata) for d in docs] == [(d.page_content, d.metadata) for d in indexed]
    assert len(corpus_paragraphs(load_dataset("musique", files[0]))) == 3  # the repeated question adds nothing


def test_2wiki_evidence_triples_become_the_gold_decomposition(tmp_path: Path) -> None:
    record = _twowiki("e", "compositional", 0)
    record["evidences"] = [["Forbidden Ground", "director", "Pál Gábor"], ["Pál Gábor", "date of birth", "1932"], ["x"]]
    (example,) = load_dataset("2wikimultihopqa", _jsonl(tmp_path / "dev.jsonl", [record]))
    assert example["decomposition"] == [
        {"question": "What is the director of Forbidden Ground?", "answer": "Pál Gábor"},
        {"question": "What is the date of birth of Pál Gábor?", "answer": "1932"},
    ]  # a malformed triple is left out
    assert (
        load_dataset("2wikimultihopqa", _jsonl(tmp_path / "none.jsonl", [_twowiki("n", "comparison", 0)]))[0][
            "decomposition"
        ]
        is None
    )


def test_hotpotqa_in_the_datasets_layout(tmp_path: Path) -> None:
    """``datasets.load_dataset("hotpot_qa", "distractor")`` rows: context and supporting facts as columns."""
    rows = []
    for record in HOTPOT_RAW:
        context = record["context"]
        facts = record["supporting_facts"]
        rows.append(
            {
                **record,
                "id": record["_id"],
                "context": {"title": [c[0] for c in context], "sentences": [c[1] for c in context]},
                "supporting_facts": {"title": [f[0] for f in facts], "sent_id": [f[1] for f in facts]},
            }
        )
        del rows[-1]["_id"]
    as_rows, as_columns = tmp_path / "rows.json", tmp_path / "columns.jsonl"
    as_rows.write_text(json.dumps(HOTPOT_RAW), encoding="utf-8")
    as_columns.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert detect_dataset(as_columns) == "hotpotqa"
    expected, got = load_dataset("hotpotqa", as_rows), load_dataset("hotpotqa", as_columns)
    for a, b in zip(expected, got, strict=True):
        assert (a["qid"], a["question"], a["answers"], a["paragraphs"]) == (
            b["qid"],
            b["question"],
            b["answers"],
            b["paragraphs"],
        )
        assert b["meta"]["supporting_facts"] == a["meta"]["supporting_facts"]
    assert [d.metadata for d in corpus_paragraphs(got)] == [d.metadata for d in iter_corpus(as_columns)]
    broken = {**rows[0], "context": {"title": ["a", "b"], "sentences": [["x"]]}}
    (tmp_path / "broken.jsonl").write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="must hold lists 'title' and 'sentences' of one length"):
        load_dataset("hotpotqa", tmp_path / "broken.jsonl")
