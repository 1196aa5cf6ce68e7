r"""ColBERTv2 late-interaction retrieval (the paper's retriever) through RAGatouille.

SearChain retrieves with ColBERTv2. :func:`build_colbert_index` (``searchain index
--retriever colbert``) and :meth:`ColBERTRetriever.from_documents` encode passages into a
PLAID index with RAGatouille's Stanford ``colbert-ai`` backend, inside a searchain index
directory (see :mod:`searchain_graph.ir.index`); :class:`ColBERTRetriever` opens one
again without encoding the corpus. Needs the ``colbert`` extra (``pip install
'searchain-graph[colbert]'``); :mod:`searchain_graph.ir._ragatouille_compat` makes
RAGatouille 0.0.9 run on langchain 1.x and transformers 5.x.

The index encodes :func:`~searchain_graph.ir.corpus.passage_text` (``"title\ntext"``), the
text BM25 indexes, so both retrievers search the same passages.
Results are the stored documents (``page_content`` and ``metadata`` as indexed) with
``metadata["score"]`` added (ColBERT's MaxSim score).

Everything runs in one process (``nranks=1``) and works on CPU; colbert-ai uses a GPU
when one is visible. The first use on CPU compiles colbert-ai's C++ extensions, side by side
(:func:`~searchain_graph.ir._ragatouille_compat.compile_extensions`: about 85 s on 2 cores,
then cached in ``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``), which needs a
C++ compiler and the Python headers.

An index directory holds, besides the manifest and the passage store::

    colbert/indexes/passages/   RAGatouille's PLAID index (codes, residuals, IVF, metadata)

The manifest records the checkpoint as an absolute local directory; the index directory
itself can be moved. If the checkpoint moves, pass ``checkpoint=`` to
:meth:`ColBERTRetriever.load` to relink the index to it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, field_validator, model_validator

from searchain_graph._files import write_aside
from searchain_graph.ir._ragatouille_compat import (
    LOCK,
    colbert_call,
    compile_extensions,
    import_ragatouille,
    load_model,
)
from searchain_graph.ir.corpus import PassageStore, iter_corpora, passage_text, write_passages
from searchain_graph.ir.index_dir import MANIFEST, IndexSummary, read_manifest, write_index
from searchain_graph.llms.hub import ModelNotFoundError, check_local, from_pretrained, looks_local

__all__ = ["DEFAULT_CHECKPOINT", "ColBERTRetriever", "build_colbert_index", "resolve_checkpoint"]

DEFAULT_CHECKPOINT = "colbert-ir/colbertv2.0"
"""The ColBERTv2 checkpoint of the paper (a hub name; offline, pass a local copy instead)."""

PLAID_INDEX_NAME = "passages"
PLAID_DIR = Path("colbert") / "indexes" / PLAID_INDEX_NAME
"""Where RAGatouille puts the PLAID index inside an index directory (``ROOT/colbert/indexes/NAME``)."""

# Weights for other frameworks, which a hub snapshot does not need.
_HUB_IGNORE = ["*.h5", "*.msgpack", "*.onnx", "*.ot", "*.tflite", "*.mlmodel"]


def resolve_checkpoint(name_or_path: str | Path) -> str:
    """Return the local directory of a ColBERT checkpoint given as a local path or a hub name.

    Hub names are fetched, or found in the Hugging Face cache, with
    ``huggingface_hub.snapshot_download``.

    Raises:
        ModelNotFoundError: the local directory does not exist or has no ``config.json``, or
            the hub name cannot be fetched (the message says how to pass a local copy).
    """
    what = "ColBERT checkpoint"
    if looks_local(name_or_path):
        path = Path(check_local(name_or_path, what=what)).resolve()
    else:
        from huggingface_hub import snapshot_download

        def download(repo_id: str) -> str:
            return str(snapshot_download(repo_id, ignore_patterns=_HUB_IGNORE))

        path = Path(from_pretrained(download, str(name_or_path), what=what)).resolve()
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(f"{what} {path} has no config.json: expected a ColBERT (Hugging Face) checkpoint")
    return str(path)


def _load_checkpoint(factory: Callable[[], Any], checkpoint_dir: str) -> Any:
    try:
        return load_model(factory)
    except OSError as exc:
        raise ModelNotFoundError(f"could not load ColBERT checkpoint from {checkpoint_dir}: {exc}") from exc


# Below this many passages, k-means runs in PyTorch: FAISS refuses fewer training vectors than
# centroids, which tiny corpora have (colbert-ai picks ~16*sqrt(#token embeddings) centroids).
_FAISS_MIN_PASSAGES = 500


def _use_faiss(passages: int) -> bool:
    """Whether to cluster with FAISS: on CPU, when faiss is installed and the corpus is not tiny.

    FAISS k-means is about 10x faster on CPU than RAGatouille's PyTorch k-means (1.4 s against
    13 s for 200 passages here); on a GPU the PyTorch one is fast, and FAISS-CPU would make
    RAGatouille warn and sleep 5 s.
    """
    import torch

    return (
        passages >= _FAISS_MIN_PASSAGES
        and importlib.util.find_spec("faiss") is not None
        and not torch.cuda.is_available()
    )


def _encode(
    out: Path,
    docs: Iterable[Document],
    checkpoint_dir: str,
    *,
    max_document_length: int,
    batch_size: int,
    report: Callable[[int], None] | None,
) -> int:
    """Store ``docs`` in ``out`` and encode them into a PLAID index there; return their number."""
    texts = [passage_text(d) for d in write_passages(docs, out)]
    if not texts:
        raise ValueError("cannot build a ColBERT index over an empty corpus")
    rag_class = import_ragatouille()
    compile_extensions()  # side by side, before colbert-ai compiles them one by one
    rag = _load_checkpoint(
        lambda: rag_class.from_pretrained(checkpoint_dir, n_gpu=1, verbose=0, index_root=str(out)), checkpoint_dir
    )
    with colbert_call(rag):
        rag.index(
            collection=texts,
            document_ids=[str(i) for i in range(len(texts))],
            index_name=PLAID_INDEX_NAME,
            overwrite_index="force_silent_overwrite",
            max_document_length=max_document_length,
            split_documents=False,
            bsize=batch_size,
            use_faiss=_use_faiss(len(texts)),
        )
    if report is not None:
        report(len(texts))
    return len(texts)


def _build(
    docs: Callable[[], Iterable[Document]],
    directory: str | Path,
    sources: Sequence[str],
    *,
    checkpoint: str | Path,
    max_document_length: int,
    batch_size: int,
    progress: Callable[[int], None] | None,
) -> IndexSummary:
    import_ragatouille()  # fail before anything is written when the extra is missing
    checkpoint_dir = resolve_checkpoint(checkpoint)

    def write(out: Path, report: Callable[[int], None] | None) -> int:
        return _encode(
            out, docs(), checkpoint_dir, max_document_length=max_document_length, batch_size=batch_size, report=report
        )

    extra = {
        "checkpoint": checkpoint_dir,
        "colbert_index": PLAID_DIR.as_posix(),
        "max_document_length": max_document_length,
    }
    return write_index(directory, "colbert", sources, write, progress=progress, extra=extra)


def build_colbert_index(
    paths: str | Path | Sequence[str | Path],
    directory: str | Path,
    *,
    checkpoint: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    max_document_length: int = 256,
    batch_size: int = 32,
) -> IndexSummary:
    """Index corpus files with ColBERT into ``directory`` (what ``build_index(..., retriever="colbert")`` runs).

    Args:
        paths: Corpus files (see :mod:`searchain_graph.ir.corpus` for the formats).
        directory: The index directory; an index already there is replaced once the new one
            is complete.
        checkpoint: ColBERT checkpoint, a local directory or a hub name (default
            :data:`DEFAULT_CHECKPOINT`).
        progress: Called with the number of passages indexed (once, at the end: colbert-ai
            does not report progress).
        max_document_length: Passages are truncated to this many tokens (colbert ``doc_maxlen``).
        batch_size: Passages encoded per batch.

    Raises:
        ImportError: the ``colbert`` extra is not installed.
        ModelNotFoundError: the checkpoint cannot be found or fetched.
        FileNotFoundError: a corpus file is missing.
        CorpusFormatError: a line is not a passage (nothing is written then).
        ValueError: the corpus is empty.
    """
    sources = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    return _build(
        lambda: iter_corpora(paths),
        directory,
        sources,
        checkpoint=DEFAULT_CHECKPOINT if checkpoint is None else checkpoint,
        max_document_length=max_document_length,
        batch_size=batch_size,
        progress=progress,
    )


def _write_json(path: Path, data: Any) -> None:
    write_aside(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class ColBERTRetriever(BaseRetriever):
    """ColBERTv2 (PLAID) over an index directory, as a LangChain retriever.

    Build an index with :meth:`from_documents`, :func:`build_colbert_index` or ``searchain
    index --retriever colbert``; open one with :meth:`load` (loads the model at once) or
    ``ColBERTRetriever(index_dir=DIR)`` (loads it on the first query). Opening reads the
    saved index: the corpus is not encoded again.

    Example:
        >>> retriever = ColBERTRetriever.from_documents(  # doctest: +SKIP
        ...     load_corpus("corpus.jsonl"), "colbert-index", checkpoint="/models/colbertv2.0"
        ... )
        >>> retriever.invoke("Where was Kevin Drew born?")  # doctest: +SKIP
        >>> ColBERTRetriever.load("colbert-index", k=3).invoke("Kevin Drew", k=1)  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index_dir: str
    """A ColBERT index directory (see :mod:`searchain_graph.ir.index`)."""

    k: int = 1
    """Passages returned per query (SearChain uses the top-1); ``invoke(q, k=n)`` overrides it."""

    checkpoint: str | None = None
    """Checkpoint to encode queries with instead of the one recorded in the index (a local
    directory or a hub name), for an index whose checkpoint has moved: the index is relinked
    to it (its metadata rewritten) when the model loads."""

    _docs: Sequence[Document] = PrivateAttr(default_factory=list)
    _manifest: dict[str, Any] = PrivateAttr(default_factory=dict)
    _rag: Any = PrivateAttr(default=None)

    @field_validator("index_dir", mode="before")
    @classmethod
    def _index_dir_as_str(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @model_validator(mode="after")
    def _open_index_dir(self) -> ColBERTRetriever:
        """Read the manifest and open the passage store (cheap); the model loads later."""
        directory = Path(self.index_dir).expanduser().resolve()
        self.index_dir = str(directory)
        manifest = read_manifest(directory)
        if manifest.get("retriever") != "colbert":
            raise ValueError(f"{directory} is a {manifest.get('retriever')!r} index, not a ColBERT one")
        docs = PassageStore(directory)
        if len(docs) != manifest["passages"]:
            raise ValueError(f"{directory}: {MANIFEST} says {manifest['passages']} passages, the store has {len(docs)}")
        self._manifest = manifest
        self._docs = docs
        return self

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        index_dir: str | Path,
        *,
        checkpoint: str | Path = DEFAULT_CHECKPOINT,
        k: int = 1,
        max_document_length: int = 256,
        batch_size: int = 32,
        **kwargs: Any,
    ) -> ColBERTRetriever:
        """Encode ``documents`` into a new index in ``index_dir`` and return a retriever over it.

        Args:
            documents: Passages; ``page_content`` is the text, ``metadata`` has ``"title"`` and
                ``"id"`` and must be JSON-serialisable. ``passage_text(doc)`` is what is encoded.
            index_dir: The index directory; an index already there is replaced once the new one
                is complete (a non-empty directory that is not an index is refused).
            checkpoint: ColBERT checkpoint, a local directory or a hub name.
            k: Passages returned per query.
            max_document_length: Passages are truncated to this many tokens (colbert ``doc_maxlen``).
            batch_size: Passages encoded per batch.
            **kwargs: Other fields of the retriever (``tags``, ``metadata``).

        Raises:
            ImportError: the ``colbert`` extra is not installed.
            ModelNotFoundError: the checkpoint cannot be found or fetched.
            FileExistsError: ``index_dir`` is a non-empty directory that is not an index.
            ValueError: ``documents`` is empty.
        """
        summary = _build(
            lambda: documents,
            index_dir,
            [],
            checkpoint=checkpoint,
            max_document_length=max_document_length,
            batch_size=batch_size,
            progress=None,
        )
        return cls.load(summary.directory, k=k, **kwargs)

    @classmethod
    def load(
        cls, directory: str | Path, *, k: int = 1, checkpoint: str | Path | None = None, **kwargs: Any
    ) -> ColBERTRetriever:
        """Open a ColBERT index directory and load the model now (the corpus is not re-encoded).

        Args:
            directory: The index directory.
            k: Passages returned per query.
            checkpoint: See :attr:`checkpoint`; by default the checkpoint the index was built with.
            **kwargs: Other fields of the retriever.

        Raises:
            FileNotFoundError: ``directory`` is not an index.
            ValueError: it is not a ColBERT index.
            ModelNotFoundError: the checkpoint has moved (pass ``checkpoint=``) or cannot be fetched.
            ImportError: the ``colbert`` extra is not installed.
        """
        retriever = cls(
            index_dir=os.fspath(directory), k=k, checkpoint=None if checkpoint is None else str(checkpoint), **kwargs
        )
        retriever._ensure_loaded()
        return retriever

    def __len__(self) -> int:
        return len(self._docs)

    def _relink(self, checkpoint_dir: str) -> None:
        directory = Path(self.index_dir)
        metadata_path = directory / PLAID_DIR / "metadata.json"
        metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
        metadata["config"]["checkpoint"] = checkpoint_dir
        _write_json(metadata_path, metadata)
        self._manifest["checkpoint"] = checkpoint_dir
        _write_json(directory / MANIFEST, self._manifest)

    def _ensure_loaded(self) -> Any:
        with LOCK:
            if self._rag is not None:
                return self._rag
            rag_class = import_ragatouille()
            recorded = str(self._manifest["checkpoint"])
            if self.checkpoint is not None:
                checkpoint_dir = resolve_checkpoint(self.checkpoint)
                if checkpoint_dir != recorded:
                    self._relink(checkpoint_dir)
            elif not Path(recorded).is_dir():
                raise ModelNotFoundError(
                    f"the ColBERT checkpoint this index was built with is gone: {recorded}. Pass its new "
                    f"location: ColBERTRetriever.load(index_dir, checkpoint=DIR) or ColBERTRetriever(checkpoint=DIR)."
                )
            plaid_dir = Path(self.index_dir) / PLAID_DIR
            if not (plaid_dir / "metadata.json").is_file():
                raise FileNotFoundError(f"{plaid_dir} is not a PLAID index (no metadata.json)")
            compile_extensions()
            rag = load_model(lambda: rag_class.from_index(str(plaid_dir), n_gpu=1, verbose=0))
            if len(rag.model.collection) != len(self._docs):
                raise ValueError(
                    f"{plaid_dir} holds {len(rag.model.collection)} passages, the passage store {len(self._docs)}"
                )
            self._rag = rag
            return rag

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self.k if k is None else k
        if k <= 0:
            return []
        rag = self._ensure_loaded()
        with colbert_call(rag):
            hits = rag.search(query, k=min(k, len(self._docs)))
        results = []
        for hit in hits:
            doc = self._docs[int(hit["document_id"])]
            results.append(
                Document(page_content=doc.page_content, metadata={**doc.metadata, "score": float(hit["score"])})
            )
        return results

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        # ColBERT encodes the query with a model: keep the event loop free. (The inherited
        # version would also reject ``ainvoke(q, k=n)``.)
        return await asyncio.to_thread(self._get_relevant_documents, query, run_manager=run_manager.get_sync(), k=k)
