"""Unit tests of the extractive readers on tiny random-init models of the real classes."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from langchain_core.messages import BaseMessage

from searchain_graph import ModelNotFoundError, ReaderOutput, create_searchain_graph
from searchain_graph.ir.readers.base import Passage
from searchain_graph.ir.readers.dpr import DPRReader
from searchain_graph.ir.readers.extractive import ExtractiveQAReader
from searchain_graph.ir.readers.spans import best_span, plan_batches, split_passage
from tests.fakes import CHAIN_FIXED, CHAIN_WRONG, QUESTION, RuleChatModel, retriever, tracing_reply
from tests.helpers import assert_reads_close
from tests.tiny_models import TINY_SIZES, build_tiny_dpr

WORDS = (
    "kevin drew was born in toronto ontario canada musician album debut solo released spirit if the "
    "a an of on at to for from by with and or is it who what where when which greyhound buses bus "
    "coach terminal station central left leave montreal largest city province quebec performer "
    "birthplace canadian september zebra river bank money water long filler word paris france"
).split()
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
PUNCT = list(".,?!;:'\"()-…")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *LETTERS, *PUNCT, *(f"##{c}" for c in LETTERS)]

MAX_LENGTH, STRIDE, MAX_QUERY = 64, 16, 16
PASSAGES = [
    (
        "Who is the performer?",
        Passage("Spirit If... is the debut solo album by Kevin Drew, released in 2007.", "Spirit If..."),
    ),
    (
        "Where was he born?",
        Passage("Kevin Drew (born 9 September 1976 in Toronto) is a Canadian musician.", "Kevin Drew"),
    ),
    (
        "Where do buses leave from?",
        Passage("Greyhound buses left from the central bus station.", "Toronto Coach Terminal"),
    ),
    ("What is the largest city?", Passage("Montreal is the largest city in the province of Quebec.")),
    ("Which river?", Passage(" ".join(["the long river bank of the water"] * 40), "River")),
    ("Where is Paris?", Passage("Paris is in France.", "Paris")),
]


def write_vocab(path: Path) -> Path:
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    return vocab


@pytest.fixture(scope="session")
def tiny_dpr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-init transformers.DPRReader with a WordPiece tokenizer, saved locally."""
    return build_tiny_dpr(tmp_path_factory.mktemp("tiny-dpr-reader"), VOCAB)


@pytest.fixture(scope="session")
def tiny_qa_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-init BertForQuestionAnswering (loaded back through the Auto classes)."""
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bert-qa")
    BertTokenizerFast(vocab=str(write_vocab(path))).save_pretrained(path)
    config = BertConfig(
        vocab_size=len(VOCAB),
        **TINY_SIZES,
        max_position_embeddings=512,
    )
    torch.manual_seed(1)
    model = BertForQuestionAnswering(config)
    with torch.no_grad():
        model.qa_outputs.weight.mul_(20)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_roberta_qa_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-init RobertaForQuestionAnswering with a byte-level BPE trained here."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import RobertaConfig, RobertaForQuestionAnswering, RobertaTokenizerFast

    path = tmp_path_factory.mktemp("tiny-roberta-qa")
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "<unk>", "<s>", "</s>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator([p.joined() for _, p in PASSAGES] * 5, trainer)
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split()) for m in trained["merges"]]
    tokenizer = RobertaTokenizerFast(vocab=trained["vocab"], merges=merges)
    tokenizer.save_pretrained(path)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        **TINY_SIZES,
        max_position_embeddings=520,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(2)
    model = RobertaForQuestionAnswering(config)
    with torch.no_grad():
        model.qa_outputs.weight.mul_(20)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def dpr(tiny_dpr_dir: Path) -> DPRReader:
    return DPRReader(tiny_dpr_dir, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY).load()


@pytest.fixture(scope="session")
def qa(tiny_qa_dir: Path) -> ExtractiveQAReader:
    return ExtractiveQAReader(tiny_qa_dir, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY).load()


# -- span search ---------------------------------------------------------------------------------


def span(start: Sequence[float], end: Sequence[float], max_len: int, mask: Sequence[bool] | None = None) -> Any:
    m = torch.tensor(mask if mask is not None else [True] * len(start))
    s, e, score = best_span(torch.tensor(start), torch.tensor(end), m, max_len)
    return int(s), int(e), float(score)


def test_span_end_never_before_start() -> None:
    # Independent argmaxes would give start=2, end=1.
    assert span([0, 0, 5, 0], [0, 9, 0, 0], 10) == (0, 1, 9.0)


def test_span_length_limit() -> None:
    assert span([5, 0, 0, 0], [0, 0, 0, 7], 4) == (0, 3, 12.0)
    assert span([5, 0, 0, 0], [0, 0, 0, 7], 3) == (1, 3, 7.0)
    assert span([5, 0, 0, 0], [0, 0, 0, 7], 1) == (3, 3, 7.0)


def test_span_mask_excludes_positions_and_spans_across_them() -> None:
    # (1, 3) would score 18 but crosses the masked position 2.
    assert span([0, 9, 0, 0, 0], [0, 0, 0, 9, 0], 5, [True, True, False, True, True]) == (1, 1, 9.0)
    assert span([9, 0, 0], [9, 0, 0], 3, [False, True, True]) == (1, 1, 0.0)
    assert span([1, 2], [3, 4], 2, [False, False]) == (-1, -1, -math.inf)


def test_span_ties_go_to_earliest_start_then_shortest() -> None:
    assert span([1, 0], [1, 1], 2) == (0, 0, 2.0)
    assert span([0, 0, 0], [0, 0, 0], 3) == (0, 0, 0.0)


def test_span_batched_matches_brute_force() -> None:
    gen = torch.Generator().manual_seed(0)
    start, end = torch.randn(8, 12, generator=gen), torch.randn(8, 12, generator=gen)
    mask = torch.rand(8, 12, generator=gen) > 0.3
    starts, ends, scores = best_span(start, end, mask, 4)
    for b in range(8):
        candidates = [
            (float(start[b, i] + end[b, j]), -i, -j)
            for i, j in itertools.product(range(12), repeat=2)
            if i <= j < i + 4 and bool(mask[b, i : j + 1].all())
        ]
        score, i, j = max(candidates)
        assert (int(starts[b]), int(ends[b])) == (-i, -j)
        assert float(scores[b]) == pytest.approx(score)


def test_split_passage() -> None:
    assert split_passage("Title\nSome text\nmore") == ("Title", "Some text\nmore", 6)
    assert split_passage("Only text") == ("", "Only text", 0)
    assert split_passage("Title\n") == ("Title", "", 6)


def test_plan_batches() -> None:
    lengths = [50, 100, 45, 90]
    assert plan_batches(lengths, 32) == [[1, 3, 0, 2]]  # longest first, one padded batch
    assert plan_batches(lengths, 3) == [[1, 3, 0], [2]]
    # 100, 90 pad to 200 for 190 real tokens; with 50 it would be 300 for 240 (> 1.2x).
    assert plan_batches(lengths, 32, max_padding=0.2) == [[1, 3], [0, 2]]
    assert plan_batches(lengths, 32, max_padding=0.0) == [[1], [3], [0], [2]]
    assert plan_batches([], 4) == []


# -- DPR reader ----------------------------------------------------------------------------------


def test_dpr_confidence_is_the_relevance_logit_and_span_matches_transformers(dpr: DPRReader) -> None:
    from transformers import DPRReaderTokenizerFast

    query, passage = PASSAGES[1]
    title, text = passage.title, passage.text
    tokenizer = DPRReaderTokenizerFast.from_pretrained(dpr.model_name)
    encoded = tokenizer(questions=query, titles=title, texts=text, return_tensors="pt").to(dpr.device)
    assert encoded["input_ids"].shape[1] <= MAX_LENGTH  # one window
    with torch.inference_mode():
        outputs = dpr._model(**encoded)
    out = dpr.read(query, passage)
    assert out.confidence == pytest.approx(float(outputs.relevance_logits[0]), abs=1e-5)
    # transformers' own span search (end >= start, length limit), run on the text tokens only
    # (its decode_best_spans also searches the title), picks the same tokens, which the
    # reader returns as passage text widened to whole words.
    ids = encoded["input_ids"][0].tolist()
    text_offset = ids.index(tokenizer.sep_token_id, ids.index(tokenizer.sep_token_id) + 1) + 1
    [(first, last)] = tokenizer._get_best_spans(
        outputs.start_logits[0, text_offset:].tolist(),
        outputs.end_logits[0, text_offset:].tolist(),
        max_answer_length=dpr.max_answer_tokens,
        top_spans=1,
    )
    encoded_text = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    words, offsets = encoded_text.word_ids(), encoded_text["offset_mapping"]
    first = words.index(words[first])  # widened to whole words
    last = len(words) - 1 - words[::-1].index(words[last])
    assert out.answer == text[offsets[first][0] : offsets[last][1]].strip()


@pytest.mark.parametrize("max_answer_tokens", [1, 2, 3])
def test_dpr_answer_is_a_substring_of_the_text_within_the_length_limit(
    tiny_dpr_dir: Path, max_answer_tokens: int
) -> None:
    reader = DPRReader(tiny_dpr_dir, max_answer_tokens=max_answer_tokens)
    title, question = "Zebra Quebec", "Who is the musician in Montreal?"
    text = "Kevin Drew (born 9 September 1976 in Toronto, Ontario) is a Canadian solo musician."
    for out in reader.read_batch([(question, Passage(text, title)), (question, Passage(text))]):
        assert out.answer and out.answer in text
        assert out.answer not in title and out.answer not in question
        assert len(out.answer.split()) <= max_answer_tokens  # a word is at least one token


def test_read_batch_equals_read(dpr: DPRReader, qa: ExtractiveQAReader) -> None:
    for reader in (dpr, qa):
        batched = reader.read_batch(PASSAGES)
        singles = [reader.read(q, p) for q, p in PASSAGES]
        assert_reads_close(batched, singles)  # padding in a batch may change the last digits of f
        assert all(
            isinstance(b, ReaderOutput) and b.answer in p.joined() for b, (_, p) in zip(batched, PASSAGES, strict=True)
        )


async def test_aread_batch(dpr: DPRReader) -> None:
    # The async path runs read_batch in a worker thread: the same answers, f up to float rounding.
    assert_reads_close(await dpr.aread_batch(PASSAGES[:3]), dpr.read_batch(PASSAGES[:3]))
    assert_reads_close(await dpr.aread(*PASSAGES[0]), dpr.read(*PASSAGES[0]))


def test_mini_batches_do_not_change_results(tiny_dpr_dir: Path, dpr: DPRReader) -> None:
    small = DPRReader(tiny_dpr_dir, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY, batch_size=2)
    assert_reads_close(small.read_batch(PASSAGES), dpr.read_batch(PASSAGES))


def test_concurrent_reads_from_threads(dpr: DPRReader) -> None:
    want = dpr.read_batch(PASSAGES)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: dpr.read_batch(PASSAGES), range(8)))
    for got in results:
        assert_reads_close(got, want)


# -- long inputs ---------------------------------------------------------------------------------

LONG_TEXT = " ".join(f"filler word {i}" for i in range(150)) + " the zebra of the river bank."


@pytest.mark.parametrize("which", ["dpr", "qa"])
def test_windows_cover_the_whole_long_text(which: str, request: pytest.FixtureRequest) -> None:
    reader = request.getfixturevalue(which)
    passage = Passage(LONG_TEXT, "Title words")
    windows = reader._windows("Where is the animal?", passage)
    assert len(windows) > 5
    assert all(len(w.input_ids) <= MAX_LENGTH for w in windows)
    # Every token of the text (DPR) or of "title\ntext" (QA) is in some window; neighbours overlap by the stride.
    source = passage.text if which == "dpr" else passage.joined()
    tokens = reader._tokenizer(source, add_special_tokens=False, return_offsets_mapping=True)
    expected = set(map(tuple, tokens["offset_mapping"]))
    assert {offsets for w in windows for offsets in w.char_offsets} == expected
    for left, right in itertools.pairwise(windows):
        assert len(set(left.char_offsets) & set(right.char_offsets)) == STRIDE


class MarkerBias:
    """Wraps a loaded model: start/end logits +100 on a marker token, relevance +100 where it occurs."""

    def __init__(self, model: Any, marker_id: int) -> None:
        self.model, self.marker_id = model, marker_id

    def __call__(self, **inputs: torch.Tensor) -> SimpleNamespace:
        out = self.model(**inputs)
        hit = (inputs["input_ids"] == self.marker_id).float()
        relevance = getattr(out, "relevance_logits", None)
        return SimpleNamespace(
            start_logits=out.start_logits + 100 * hit,
            end_logits=out.end_logits + 100 * hit,
            relevance_logits=None if relevance is None else relevance + 100 * hit.amax(-1),
        )


@pytest.mark.parametrize("cls", [DPRReader, ExtractiveQAReader])
def test_answer_from_a_late_window(
    cls: type[DPRReader | ExtractiveQAReader], tiny_dpr_dir: Path, tiny_qa_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tiny_dpr_dir if cls is DPRReader else tiny_qa_dir
    reader = cls(path, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY).load()
    passage = Passage(LONG_TEXT, "River")
    unbiased = reader.read("Where is the animal?", passage)
    assert unbiased.answer in passage.joined()
    monkeypatch.setattr(reader, "_model", MarkerBias(reader._model, reader._tokenizer.convert_tokens_to_ids("zebra")))
    out = reader.read("Where is the animal?", passage)
    assert out.answer == "zebra"
    # The QA reader's f is clipped to exactly MAX_CONFIDENCE.
    assert out.confidence > 50 if cls is DPRReader else out.confidence == 10.0
    # Alone among other pairs in one batch, it still wins (padding may change the last digits of f).
    outs = reader.read_batch([PASSAGES[0], ("Where is the animal?", passage), PASSAGES[4]])
    assert_reads_close(outs[1], out)


@pytest.mark.parametrize("which", ["dpr", "qa"])
def test_long_question_is_cut(which: str, request: pytest.FixtureRequest) -> None:
    reader = request.getfixturevalue(which)
    question = "where was kevin drew born " * 100
    out = reader.read(question, PASSAGES[1][1])
    assert out.answer in PASSAGES[1][1].joined() and math.isfinite(out.confidence)
    long_title = Passage("Kevin Drew was born in Toronto.", "Kevin " * 200)
    assert reader.read(question, long_title).answer in long_title.joined()


# -- edge cases ----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["dpr", "qa"])
def test_empty_passage_and_empty_query(which: str, request: pytest.FixtureRequest) -> None:
    reader = request.getfixturevalue(which)
    assert reader.read("Where was he born?", "") == ReaderOutput("", -10.0)
    assert reader.read("Where was he born?", "   ") == ReaderOutput("", -10.0)
    # A title alone has no text to extract from.
    assert reader.read("Where was he born?", Passage("", "Kevin Drew")) == ReaderOutput("", -10.0)
    out = reader.read("", PASSAGES[1][1])
    assert out.answer and out.answer in PASSAGES[1][1].joined() and math.isfinite(out.confidence)
    assert reader.read_batch([]) == []


def test_qa_confidence_is_the_log_odds_of_the_span_probability(qa: ExtractiveQAReader) -> None:
    query, passage = PASSAGES[1]
    tok = qa._tokenizer
    encoded = tok(query, passage.joined(), return_tensors="pt", return_offsets_mapping=True)
    offsets = encoded.pop("offset_mapping")[0].tolist()
    assert encoded["input_ids"].shape[1] <= MAX_LENGTH
    with torch.inference_mode():
        out = qa._model(**encoded.to(qa.device))
    context = [i for i, s in enumerate(encoded.sequence_ids(0)) if s == 1]
    support = [0, *context]  # [CLS] (no answer) and the passage
    log_start = torch.log_softmax(out.start_logits[0, support].double(), -1)
    log_end = torch.log_softmax(out.end_logits[0, support].double(), -1)
    where = {pos: k for k, pos in enumerate(support)}
    best = max(
        (float(log_start[where[i]] + log_end[where[j]]), -i, -j)
        for i in context
        for j in context
        if i <= j < i + qa.max_answer_tokens
    )
    logp, i, j = best[0], -best[1], -best[2]
    p = math.exp(logp)
    expected = max(-10.0, min(10.0, math.log(p / (1 - p))))
    got = qa.read(query, passage)
    assert got.confidence == pytest.approx(expected, abs=1e-4)
    assert got.answer == passage.joined()[offsets[i][0] : offsets[j][1]].strip()
    # θ = 1.5 on this scale means p > 0.82.
    assert math.log(0.82 / 0.18) > ExtractiveQAReader.default_threshold > math.log(0.81 / 0.19)


def test_roberta_style_tokenizer(tiny_roberta_qa_dir: Path) -> None:
    reader = ExtractiveQAReader(tiny_roberta_qa_dir, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY)
    reader.load()
    query, passage = PASSAGES[1]
    [window] = reader._windows(query, passage)
    tokens = reader._tokenizer.convert_ids_to_tokens(window.input_ids)
    first, last = window.context
    assert tokens[0] == "<s>" and tokens[first - 2 : first] == ["</s>", "</s>"] and tokens[-1] == "</s>"
    assert window.null_index == 0
    # The newline between title and text is a token of its own, which no answer may use.
    newline = [k for k, (a, b) in enumerate(window.char_offsets) if passage.joined()[a:b] == "\n"]
    assert newline and not any(window.answerable[k] for k in newline)
    outs, singles = reader.read_batch(PASSAGES), [reader.read(q, p) for q, p in PASSAGES]
    assert_reads_close(outs, singles)
    for out, (_, p) in zip(outs, PASSAGES, strict=True):
        assert out.answer and out.answer in p.joined() and "\n" not in out.answer
        assert -10.0 <= out.confidence <= 10.0


def test_defaults_and_validation(tiny_dpr_dir: Path) -> None:
    assert DPRReader.default_threshold == 1.5 and ExtractiveQAReader.default_threshold == 1.5
    assert DPRReader().model_name == "facebook/dpr-reader-multiset-base"
    assert ExtractiveQAReader().model_name == "deepset/roberta-base-squad2"
    with pytest.raises(ValueError, match="stride"):
        DPRReader(tiny_dpr_dir, max_length=100, stride=80)
    with pytest.raises(ValueError):
        ExtractiveQAReader(tiny_dpr_dir, max_answer_tokens=0)


# -- loading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DPRReader, ExtractiveQAReader])
def test_missing_local_path(cls: type[DPRReader | ExtractiveQAReader], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-reader"
    reader = cls(missing)
    with pytest.raises(ModelNotFoundError, match="no-such-reader"):
        reader.read("q", "some passage")


@pytest.mark.parametrize("cls", [DPRReader, ExtractiveQAReader])
def test_hub_name_offline_says_how_to_pass_a_local_directory(cls: type[DPRReader | ExtractiveQAReader]) -> None:
    reader = cls("searchain-tests/no-such-reader")
    with pytest.raises(ModelNotFoundError, match="local directory") as info:
        reader.load()
    assert "searchain-tests/no-such-reader" in str(info.value)


# -- in the graph --------------------------------------------------------------------------------


def chain_llm() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        return CHAIN_FIXED if "should be" in messages[-1].text else CHAIN_WRONG

    return RuleChatModel(respond=respond)


def test_dpr_reader_in_the_graph(dpr: DPRReader) -> None:
    graph = create_searchain_graph(chain_llm(), retriever(), dpr, max_rounds=3)
    out = graph.invoke({"question": QUESTION})
    assert out["answer"]
    assert 1 <= out["rounds"] <= 3
    assert len(out["references"]) == 3


async def test_qa_reader_in_the_async_graph(qa: ExtractiveQAReader) -> None:
    graph = create_searchain_graph(chain_llm(), retriever(), qa, max_rounds=3)
    out = await graph.ainvoke({"question": QUESTION})
    assert out["answer"]
    assert len(out["references"]) == 3


def test_cli_reads_with_a_local_dpr_reader(
    tiny_dpr_dir: Path, tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from searchain_graph.cli import main

    demo = str(Path(__file__).resolve().parents[2] / "examples/data/searchain_demo.jsonl")
    args = ["ask", QUESTION, "--corpus", demo, "--model", str(tiny_llm_dir), "--max-new-tokens", "8"]
    assert main([*args, "--reader", f"dpr:{tiny_dpr_dir}", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["usage"]["llm_calls"] >= 1
    assert main([*args, "--reader", "dpr:/no/such/reader", "--quiet"]) == 2
    assert "directory not found: /no/such/reader" in capsys.readouterr().err
    assert main([*args, "--reader", "bert", "--quiet"]) == 2
    assert "unknown --reader 'bert'" in capsys.readouterr().err
