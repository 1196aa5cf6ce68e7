"""Compatibility shim for RAGatouille 0.0.9.post2 and colbert-ai 0.2.22 on current libraries.

RAGatouille 0.0.9.post2 (the last release on the Stanford ``colbert-ai`` backend; 0.0.10 is
announced to move to PyLate) and ``colbert-ai`` 0.2.22 predate langchain 1.x and
transformers 5.x. :func:`import_ragatouille` imports RAGatouille with the fixes below
applied, once per process; nothing in site-packages is edited. Each fix is narrow and
can be dropped on its own when its condition no longer holds.

1. **langchain 1.x moved** ``BaseDocumentCompressor``. RAGatouille does
   ``from langchain.retrievers.document_compressors.base import BaseDocumentCompressor``;
   langchain 1.x has no ``langchain.retrievers`` (the class lives in
   ``langchain_core.documents``). Fix: while ``ragatouille`` is being imported, and only if
   the old module cannot be imported, ``sys.modules`` holds stub modules for
   ``langchain.retrievers``, ``langchain.retrievers.document_compressors`` and
   ``...document_compressors.base`` (the last one exposing langchain-core's class); they are
   removed again right after the import. Remove when RAGatouille imports it from
   ``langchain_core`` (or when langchain < 1 is required, which it won't be).
2. **transformers 5 needs** ``post_init()``. colbert-ai builds ``HF_ColBERT`` (a
   ``BertPreTrainedModel`` subclass plus a linear projection) in
   ``colbert.modeling.hf_colbert.class_factory``; its ``__init__`` calls ``init_weights()``
   instead of ``post_init()``, so under transformers 5 ``init_weights`` fails with
   ``'HF_ColBERT' object has no attribute 'all_tied_weights_keys'`` (both when building and
   when loading a checkpoint). Fix: ``class_factory`` is wrapped (in ``hf_colbert`` and in
   the three colbert modules that imported it by name) so each class it returns gets an
   ``init_weights`` that runs ``post_init()`` first when it has not run yet (``post_init``
   then calls ``init_weights`` again, which proceeds normally; a flag prevents recursion on
   transformers 4, where ``post_init`` exists but sets no ``all_tied_weights_keys``).
   Remove when colbert-ai calls ``post_init()`` (or when transformers < 5 is required).
3. **Leaked global run context** (a RAGatouille bug, not a version issue). RAGatouille's
   ``ColBERT.__init__`` enters ``colbert.infra.run.Run().context(...)`` by hand and leaves
   it only in ``__del__``. ``Run`` is a process-wide stack: when a second model exists and
   the first is garbage-collected, the first model's exit pops the *second* model's entry,
   and the second model then indexes into the first model's directory. Fix:
   :func:`load_model` leaves that context right after construction and
   :func:`colbert_call` pushes the model's run config around each call instead.
4. **Process-wide side effects** of colbert-ai: importing ``colbert.infra.run`` sets
   ``TOKENIZERS_PARALLELISM=true``, and single-process indexing sets
   ``CUDA_VISIBLE_DEVICES`` (to ``""`` on a CPU machine, which would hide GPUs from the
   rest of the application). Fix: both variables are restored after the import and after
   each call. colbert-ai also ``print``s progress to stdout: :func:`colbert_call`
   captures stdout and logs it at DEBUG level (logger ``searchain_graph.ir.colbert``).
5. **Optional heavy imports.** RAGatouille imports ``llama_index`` (document splitting),
   ``sentence_transformers`` and ``voyager`` (hard-negative mining for training) at import
   time although retrieval never uses them. If one is not installed (a slim install, see
   below), a stand-in module is registered while ``ragatouille`` is imported and removed
   afterwards; its classes raise ImportError if RAGatouille ever instantiates them. With
   the full ``colbert`` extra they are installed and nothing is substituted.

Not patched, but handled by the extra's requirements: colbert-ai's ``psutil`` use is
lazy and dead code in 0.2.22 (and ``accelerate``, a core dependency, requires psutil).
RAGatouille's import warning about its future PyLate backend is silenced.

Slim install (about 160 MB instead of 700 MB, no llama-index, sentence-transformers,
datasets/pyarrow/pandas or faiss): ``pip install --no-deps ragatouille==0.0.9.post2
colbert-ai==0.2.22`` then ``pip install bitarray ninja scipy ujson GitPython srsly
fast-pytorch-kmeans`` (add ``faiss-cpu`` for faster k-means on corpora of 500+ passages).

colbert-ai compiles four small C++ extensions (``torch.utils.cpp_extension.load``) the
first time a model or index is used on CPU; this needs a C++ compiler and the Python
headers and is cached in ``TORCH_EXTENSIONS_DIR`` (default ``~/.cache/torch_extensions``).
colbert-ai compiles them one after another, as each class first needs its own (four single-file
compiles of about a minute each on 2 cores); :func:`compile_extensions` compiles them side by side,
one per core, before the first model is built (about half the wait on 2 cores; figures in
``docs/benchmarks.md``). Once compiled, it only loads them.

A compile that is killed leaves torch's ``lock`` file in the extension's build folder, and torch
then waits for it forever. :func:`compile_extensions` holds an OS lock (released by the kernel
when its process dies) beside each build it runs, so it can tell such a lock from a live compile:
a lock left by one of its own compiles is removed at once, one left by another program once it is
:data:`STALE_BUILD_LOCK_S` old. Either way a warning names the file.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import logging
import os
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger("searchain_graph.ir.colbert")

INSTALL_HINT = "pip install 'searchain-graph[colbert]'"

# colbert-ai and RAGatouille keep process-wide state (the Run stack, class attributes with
# compiled extensions, environment variables): every call into them holds this lock.
LOCK = threading.RLock()

_APPLIED = False

_MOVED_LANGCHAIN_MODULES = (
    "langchain.retrievers",
    "langchain.retrievers.document_compressors",
    "langchain.retrievers.document_compressors.base",
)

_COLBERT_MODULES_USING_CLASS_FACTORY = (
    "colbert.modeling.hf_colbert",
    "colbert.modeling.base_colbert",
    "colbert.modeling.tokenization.doc_tokenization",
    "colbert.modeling.tokenization.query_tokenization",
)


@contextlib.contextmanager
def _restored_environ(*names: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _langchain_retrievers_alias() -> Iterator[None]:
    """Make the pre-1.0 langchain module path importable while RAGatouille is imported (fix 1)."""
    try:
        importlib.import_module(_MOVED_LANGCHAIN_MODULES[-1])
    except ImportError:
        pass
    else:
        yield
        return
    from langchain_core.documents import BaseDocumentCompressor

    added: list[str] = []
    for name in _MOVED_LANGCHAIN_MODULES:
        if name in sys.modules:
            continue
        module = types.ModuleType(name, "Stand-in for a module langchain 1.x removed (searchain_graph shim).")
        module.__path__ = []
        sys.modules[name] = module
        added.append(name)
    base = sys.modules[_MOVED_LANGCHAIN_MODULES[-1]]
    had_class = hasattr(base, "BaseDocumentCompressor")
    if not had_class:
        base.BaseDocumentCompressor = BaseDocumentCompressor  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for name in reversed(added):
            sys.modules.pop(name, None)


# Modules RAGatouille imports at top level but does not use for indexing or search:
# module -> (attributes it imports, what RAGatouille uses them for).
_OPTIONAL_MODULES: dict[str, tuple[tuple[str, ...], str]] = {
    "llama_index": ((), "document splitting"),
    "llama_index.core": (("Document",), "document splitting"),
    "llama_index.core.text_splitter": (("SentenceSplitter",), "document splitting"),
    "sentence_transformers": (("SentenceTransformer",), "hard-negative mining"),
    "voyager": (("Index", "Space", "StorageDataType"), "hard-negative mining"),
}


def _unavailable(name: str, module: str, purpose: str) -> type[Any]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise ImportError(f"{module} is not installed (RAGatouille needs it for {purpose}): pip install {module}")

    return type(name, (), {"__init__": __init__, "__module__": module})


@contextlib.contextmanager
def _optional_module_stand_ins() -> Iterator[None]:
    """Stand-ins for RAGatouille's unused top-level imports that are not installed (fix 5)."""
    added: list[str] = []
    for name, (attributes, purpose) in _OPTIONAL_MODULES.items():
        top = name.partition(".")[0]
        if name in sys.modules or (top not in added and importlib.util.find_spec(top) is not None):
            continue
        module = types.ModuleType(name, f"Stand-in: {top} is not installed (searchain_graph shim).")
        module.__path__ = []
        for attribute in attributes:
            setattr(module, attribute, _unavailable(attribute, top, purpose))
        sys.modules[name] = module
        added.append(name)
    if added:
        logger.debug("RAGatouille imported with stand-ins for %s", ", ".join(added))
    try:
        yield
    finally:
        for name in reversed(added):
            sys.modules.pop(name, None)


def _patch_hf_colbert_class(cls: type[Any]) -> type[Any]:
    """Give a class made by ``class_factory`` an ``init_weights`` that runs ``post_init`` (fix 2)."""
    if "_searchain_post_init_patched" in cls.__dict__:
        return cls
    base_init_weights: Callable[[Any], None] = cls.init_weights

    def init_weights(self: Any) -> None:
        state = self.__dict__
        if "all_tied_weights_keys" not in state and not state.get("_searchain_in_post_init"):
            # post_init() sets all_tied_weights_keys & co. (transformers >= 5), then calls us again.
            state["_searchain_in_post_init"] = True
            try:
                self.post_init()
            finally:
                del state["_searchain_in_post_init"]
            return
        base_init_weights(self)

    cls.init_weights = init_weights
    cls._searchain_post_init_patched = True
    return cls


def _patch_colbert_class_factory() -> None:
    hf_colbert = importlib.import_module("colbert.modeling.hf_colbert")
    original = hf_colbert.class_factory
    if getattr(original, "_searchain_patched", False):
        return

    def class_factory(name_or_path: str) -> type[Any]:
        return _patch_hf_colbert_class(original(name_or_path))

    class_factory._searchain_patched = True  # type: ignore[attr-defined]
    class_factory.__wrapped__ = original  # type: ignore[attr-defined]
    for module_name in _COLBERT_MODULES_USING_CLASS_FACTORY:
        module = importlib.import_module(module_name)
        if getattr(module, "class_factory", None) is original:
            setattr(module, "class_factory", class_factory)  # noqa: B010 - a module attribute mypy can't see


def import_ragatouille() -> Any:
    """Import RAGatouille with this module's fixes applied; return ``RAGPretrainedModel``.

    Idempotent and thread-safe: the fixes are applied once per process.

    Raises:
        ImportError: RAGatouille (or one of its dependencies) is not installed; the message
            says to install the ``colbert`` extra.
    """
    global _APPLIED
    with LOCK:
        if _APPLIED:
            return importlib.import_module("ragatouille").RAGPretrainedModel
        try:
            with (
                _restored_environ("TOKENIZERS_PARALLELISM"),
                _langchain_retrievers_alias(),
                _optional_module_stand_ins(),
                warnings.catch_warnings(),
            ):
                warnings.filterwarnings("ignore", message=r"(?s).*RAGatouille WARNING: Future Release Notice")
                # ragatouille's LangChain compressor uses a pydantic-v1 style inner Config class.
                warnings.filterwarnings("ignore", message=r"Support for class-based `config` is deprecated")
                ragatouille = importlib.import_module("ragatouille")
        except ImportError as exc:
            raise ImportError(
                f"ColBERT retrieval needs RAGatouille and colbert-ai, which are not installed "
                f"({type(exc).__name__}: {exc}): {INSTALL_HINT}"
            ) from exc
        _patch_colbert_class_factory()
        _APPLIED = True
        return ragatouille.RAGPretrainedModel


# colbert-ai's classes whose ``try_load_torch_extensions(use_gpu=False)`` compiles (or loads) its CPU
# extensions: IndexScorer two (filter_pids_cpp, decompress_residuals_cpp), the others one each
# (segmented_maxsim_cpp, segmented_lookup_cpp). IndexScorer comes first: it is the longest.
EXTENSION_LOADERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("colbert.search.index_storage", "IndexScorer", ("filter_pids_cpp", "decompress_residuals_cpp")),
    ("colbert.modeling.colbert", "ColBERT", ("segmented_maxsim_cpp",)),
    ("colbert.search.strided_tensor", "StridedTensor", ("segmented_lookup_cpp",)),
)
"""(module, class, extension names) of each colbert-ai class that compiles C++ extensions for the CPU."""

STALE_BUILD_LOCK_S = 300.0
"""Age after which a build lock that none of this package's compiles left is taken as stale."""

_HOLDER_FILE = "searchain-build.lock"


def _build_directory(name: str) -> str:
    from torch.utils import cpp_extension

    directory: str = cpp_extension._get_build_directory(name, verbose=False)
    return directory


@contextlib.contextmanager
def _build_claimed(names: tuple[str, ...], stale_after_s: float = STALE_BUILD_LOCK_S) -> Iterator[None]:
    """Hold each extension's build folder against this package's other processes, minus stale locks.

    The OS lock on ``searchain-build.lock`` is released by the kernel when the holder dies, so
    once it is ours no compile of this package runs there. A holder writes its pid into the file
    when it claims the folder and empties it when it lets go: a file still holding a pid means its
    holder was killed, and torch's ``lock`` file, if it is as new as that claim, is the killed
    compile's. Any other lock came from another program and is waited on until it is
    ``stale_after_s`` old.
    """
    try:
        import fcntl
    except ImportError:  # Windows: torch's own lock only
        yield
        return
    with contextlib.ExitStack() as stack:
        for name in names:
            directory = _build_directory(name)
            holder = stack.enter_context(open(os.path.join(directory, _HOLDER_FILE), "a+b"))  # noqa: SIM115
            fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
            stack.callback(fcntl.flock, holder.fileno(), fcntl.LOCK_UN)
            holder.seek(0)
            died_at = os.fstat(holder.fileno()).st_mtime if holder.read().strip() else None
            _clear_stale_lock(os.path.join(directory, "lock"), died_at, stale_after_s)
            _write_claim(holder, f"{os.getpid()}\n")
            stack.callback(_write_claim, holder, "")  # a clean release leaves the file empty
        yield


def _write_claim(holder: Any, text: str) -> None:
    holder.truncate(0)
    holder.write(text.encode())
    holder.flush()
    os.utime(holder.fileno())


def _clear_stale_lock(lock: str, died_at: float | None, stale_after_s: float) -> None:
    """Remove torch's build ``lock`` if a killed holder that claimed at ``died_at`` left it, or once it is stale."""
    while True:
        try:
            created = os.stat(lock).st_mtime
        except FileNotFoundError:
            return
        ours = died_at is not None and created >= died_at
        if ours or time.time() - created >= stale_after_s:
            with contextlib.suppress(FileNotFoundError):
                os.remove(lock)
            whose = "a killed compile" if ours else f"a compile that has not moved in {stale_after_s:.0f} s"
            logger.warning("removed the build lock %s left by %s", lock, whose)
            return
        time.sleep(1.0)


def compile_extensions(workers: int | None = None) -> int:
    """Compile (or load, when cached) colbert-ai's CPU extensions, several at a time.

    colbert-ai compiles each extension when its class is first used, one after another. Each
    compile is one ``g++`` process, so on a machine with several cores they can run side by side:
    this runs the loaders of :data:`EXTENSION_LOADERS` in ``workers`` threads (each waits on its
    compiler subprocess). A class that has loaded its extensions already is skipped; on a machine
    where colbert-ai uses a GPU, nothing is done (its CUDA path compiles what it needs).

    Args:
        workers: Loaders run at once; ``None`` means one per CPU core, at most one per loader.

    Returns:
        How many loaders ran (0 when every extension was loaded already or a GPU is used).

    Raises:
        ImportError: colbert-ai is not installed (the ``colbert`` extra).
        ValueError: ``workers`` is below 1.
    """
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    import torch

    import_ragatouille()
    if torch.cuda.is_available():
        return 0
    with LOCK:
        loaders = [(getattr(importlib.import_module(module), name), names) for module, name, names in EXTENSION_LOADERS]
        pending = [(cls, names) for cls, names in loaders if not hasattr(cls, "loaded_extensions")]
        if not pending:
            return 0
        count = workers or min(len(pending), os.cpu_count() or 1)
        with _captured_stdout(), ThreadPoolExecutor(max_workers=count, thread_name_prefix="colbert-compile") as pool:
            for future in [pool.submit(_load_extensions, cls, names) for cls, names in pending]:
                future.result()
        return len(pending)


def _load_extensions(cls: Any, names: tuple[str, ...]) -> None:
    with _build_claimed(names):
        cls.try_load_torch_extensions(False)


def _run_stack() -> list[Any]:
    stack: list[Any] = importlib.import_module("colbert.infra.run").Run().stack
    return stack


def load_model(factory: Callable[[], Any]) -> Any:
    """Build a ``RAGPretrainedModel`` with ``factory()`` and release its leaked run context (fix 3).

    Args:
        factory: For example ``lambda: RAGPretrainedModel.from_index(path, n_gpu=1)``.
    """
    with LOCK, _captured_stdout(), _restored_environ("CUDA_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM"):
        stack = _run_stack()
        depth = len(stack)
        model = factory()
        context = getattr(getattr(model, "model", None), "run_context", None)
        if context is not None and len(stack) == depth + 1:
            # Leave it now; RAGatouille's __del__ calls __exit__ again, a no-op once exited.
            context.__exit__(None, None, None)
        return model


@contextlib.contextmanager
def _captured_stdout() -> Iterator[None]:
    """Send colbert-ai's prints to DEBUG logging, and drop its CUDA-amp warnings on CPU.

    colbert-ai calls the deprecated ``torch.cuda.amp`` API on every encode, which warns
    (deprecation, and "CUDA is not available") each time on a CPU machine. Callers hold
    :data:`LOCK`, so the process-wide warnings filter is not raced.
    """
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer), warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(colbert|torch\.cuda\.amp)(\..*)?$")
            yield
    finally:
        text = buffer.getvalue().strip()
        if text:
            logger.debug("colbert-ai output:\n%s", text)


@contextlib.contextmanager
def colbert_call(model: Any) -> Iterator[None]:
    """Scope for one call into a model made by :func:`load_model` (fixes 3 and 4).

    Holds :data:`LOCK`, pushes the model's colbert run config (root, experiment,
    ``nranks=1``), restores ``CUDA_VISIBLE_DEVICES`` afterwards and logs colbert-ai's stdout.
    """
    run = importlib.import_module("colbert.infra.run").Run()
    with (
        LOCK,
        _captured_stdout(),
        _restored_environ("CUDA_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM"),
        run.context(model.model.run_config),
    ):
        yield
