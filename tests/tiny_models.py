"""Tiny random-init checkpoints of the exact classes the readers and retrievers load.

The Hugging Face hub is out of reach in tests, so each test builds the architecture it
needs (small sizes, random weights, a vocabulary written here) and saves it with
``save_pretrained``; the package then loads it through its real loading code. A
random-init model cannot rank or read meaningfully: tests assert structure, and the few
properties that hold at random init.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TINY_SIZES: dict[str, Any] = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}
"""The transformer sizes every tiny test model uses (2 layers, hidden 32)."""


def build_tiny_dpr(path: Path, vocab: Sequence[str]) -> Path:
    """A ``transformers.DPRReader`` (2 layers, hidden 32) with a WordPiece tokenizer over ``vocab``."""
    import torch
    from transformers import DPRConfig, DPRReaderTokenizerFast
    from transformers import DPRReader as HFDPRReader

    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    DPRReaderTokenizerFast(vocab=str(path / "vocab.txt")).save_pretrained(path)
    config = DPRConfig(
        vocab_size=len(vocab),
        **TINY_SIZES,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    model = HFDPRReader(config)
    with torch.no_grad():  # a relevance head with some spread, so windows differ clearly
        model.span_predictor.qa_classifier.weight.mul_(50)
        model.span_predictor.qa_outputs.weight.mul_(20)
    model.save_pretrained(path)
    return path


def build_tiny_colbert(path: Path, texts: Iterable[str], *, dim: int = 32) -> Path:
    """A colbert-ai ``HF_ColBERT`` checkpoint (BERT, 2 layers, hidden 32) whose vocabulary covers ``texts``.

    Needs the ``colbert`` extra; the compatibility shim is applied first.
    """
    import torch
    from transformers import BertConfig, BertTokenizerFast

    from searchain_graph.ir import _ragatouille_compat

    _ragatouille_compat.import_ragatouille()
    from colbert.infra import ColBERTConfig
    from colbert.modeling.hf_colbert import class_factory

    path.mkdir(parents=True, exist_ok=True)
    words: set[str] = set()
    for text in texts:
        words.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    chars = sorted({c for w in words for c in w})
    # [unused0]/[unused1] are ColBERT's [Q]/[D] markers; [MASK] pads queries.
    specials = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = list(dict.fromkeys(specials + sorted(words) + chars + [f"##{c}" for c in chars]))
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(path)
    config = BertConfig(
        vocab_size=len(vocab),
        **TINY_SIZES,
        max_position_embeddings=512,
        pad_token_id=0,
    )
    config.save_pretrained(path)
    colbert_config = ColBERTConfig(dim=dim, doc_maxlen=256, query_maxlen=32)
    torch.manual_seed(0)
    model = class_factory(str(path))(config, colbert_config)
    model.save_pretrained(path)
    colbert_config.save_for_checkpoint(str(path))
    return path
