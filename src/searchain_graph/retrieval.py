"""Corpus loading and the embedded BM25 retriever.

SearChain retrieves the top-1 passage for every query of a chain. The paper uses
ColBERTv2; the embedded default here is BM25 (``bm25s``, with Snowball stemming),
which needs no model weights and indexes thousands of passages per second. Any
LangChain ``BaseRetriever`` can replace it.

Corpus formats (one passage per line):

* JSONL ``{"id", "title", "text"}``; FlashRAG's ``{"id", "contents"}`` (title on the
  first line of ``contents``); ``{"title", "paragraph_text"}`` (IRCoT/MuSiQue);
* TSV in DPR's ``psgs_w100.tsv`` layout: ``id<TAB>text<TAB>title`` with a header.

A line that cannot be read raises :class:`CorpusFormatError` naming the file and the
line number: nothing is dropped silently.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr


class CorpusFormatError(ValueError):
    """A corpus file has a line that is not a passage; the message names file and line."""


def _passage_from_record(record: Any, where: str) -> Document:
    if not isinstance(record, dict):
        raise CorpusFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    title = record.get("title")
    text = record.get("text")
    if text is None:
        text = record.get("paragraph_text")
    if text is None and "contents" in record:
        contents = str(record["contents"])
        if title is None and "\n" in contents:
            first, _, rest = contents.partition("\n")
            title, text = first.strip().strip('"'), rest
        else:
            text = contents
    if text is None or not str(text).strip():
        raise CorpusFormatError(f"{where}: no passage text (expected a 'text', 'contents' or 'paragraph_text' field)")
    pid = record.get("id", record.get("_id"))
    metadata: dict[str, Any] = {"title": str(title or "")}
    if pid is not None:
        metadata["id"] = str(pid)
    return Document(page_content=" ".join(str(text).split()), metadata=metadata)


def iter_corpus(path: str | Path) -> Iterator[Document]:
    """Yield the passages of a JSONL or TSV corpus file, in file order.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorpusFormatError: a line is not a passage (the message names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    suffix = path.suffix.lower()
    if suffix in {".tsv", ".tab"}:
        yield from _iter_tsv(path)
        return
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusFormatError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
            doc = _passage_from_record(record, where)
            doc.metadata.setdefault("id", str(lineno))
            yield doc


def _iter_tsv(path: Path) -> Iterator[Document]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        header: list[str] | None = None
        for row in reader:
            lineno = reader.line_num
            where = f"{path}:{lineno}"
            if header is None:
                header = [h.strip().lower() for h in row]
                if header[:2] != ["id", "text"]:
                    raise CorpusFormatError(f"{where}: expected a DPR header 'id<TAB>text<TAB>title', got {row[:3]!r}")
                continue
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise CorpusFormatError(f"{where}: expected {len(header)} tab-separated fields, got {len(row)}")
            yield _passage_from_record(dict(zip(header, row, strict=True)), where)


def load_corpus(paths: str | Path | Sequence[str | Path]) -> list[Document]:
    """Load one or more corpus files into a list of passages."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    docs: list[Document] = []
    for path in paths:
        docs.extend(iter_corpus(path))
    if not docs:
        raise CorpusFormatError(f"no passages in {', '.join(str(p) for p in paths)}")
    return docs


def passage_text(doc: Document) -> str:
    r"""The text a reader sees for a passage: ``"title\\ntext"`` (title omitted when empty)."""
    title = str(doc.metadata.get("title") or "").strip()
    return f"{title}\n{doc.page_content}" if title else doc.page_content


class BM25Retriever(BaseRetriever):
    """BM25 over an in-memory corpus, as a LangChain retriever (``bm25s`` with stemming).

    Build it with :meth:`from_documents` or :meth:`from_files`. Titles are indexed with
    the text. Queries that share no term with the corpus return no documents rather
    than an arbitrary passage.

    Example:
        >>> retriever = BM25Retriever.from_files(["corpus.jsonl"], k=1)  # doctest: +SKIP
        >>> retriever.invoke("Where was Kevin Drew born?")  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    k: int = 1
    """Passages returned per query (SearChain uses the top-1)."""

    _docs: list[Document] = PrivateAttr(default_factory=list)
    _index: Any = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)

    @classmethod
    def from_documents(cls, documents: Iterable[Document], *, k: int = 1, **kwargs: Any) -> BM25Retriever:
        """Index ``documents`` and return a retriever over them."""
        import bm25s
        import Stemmer

        # bm25s sets its logger to DEBUG on import; let it inherit the application's level again.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)
        docs = list(documents)
        if not docs:
            raise ValueError("cannot build a BM25 index over an empty corpus")
        tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
        tokens = tokenizer.tokenize([passage_text(d) for d in docs], return_as="tuple", show_progress=False)
        index = bm25s.BM25()
        index.index(tokens, show_progress=False)
        retriever = cls(k=k, **kwargs)
        retriever._docs = docs
        retriever._index = index
        retriever._tokenizer = tokenizer
        return retriever

    @classmethod
    def from_files(cls, paths: str | Path | Sequence[str | Path], *, k: int = 1, **kwargs: Any) -> BM25Retriever:
        """Load corpus files (see :func:`load_corpus`) and index them."""
        return cls.from_documents(load_corpus(paths), k=k, **kwargs)

    def __len__(self) -> int:
        return len(self._docs)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self._index is None:
            raise RuntimeError("BM25Retriever has no index: build it with from_documents() or from_files()")
        ids = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)
        if not ids or not ids[0]:
            return []
        k = min(self.k, len(self._docs))
        found, scores = self._index.retrieve(ids, k=k, show_progress=False, n_threads=1)
        results = []
        for idx, score in zip(found[0], scores[0], strict=True):
            if float(score) <= 0.0:
                continue
            doc = self._docs[int(idx)]
            results.append(Document(page_content=doc.page_content, metadata={**doc.metadata, "score": float(score)}))
        return results
