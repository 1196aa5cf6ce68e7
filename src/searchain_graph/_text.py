"""Text as it enters the package: lone surrogates replaced, lengths bounded; URLs as it shows them.

Beneath every layer (it imports nothing of the package): the file readers, the LLM's replies and
the questions all pass through here, so that no later step (an index writer, a tokenizer, the
JSON writer of a record) meets text it cannot encode, or more text than it can hold. A URL that
a message, a log line or a page shows goes through :func:`redacted_url` (no password).
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "bound_text", "redacted_url", "replace_surrogates"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes (U+FFFD REPLACEMENT CHARACTER)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> tuple[str, int]:
    r"""``text`` with every lone surrogate (U+D800..U+DFFF) replaced by U+FFFD, and how many there were.

    A ``str`` can hold such code points (JSON's ``"\ud800"`` escape makes one, and so may a
    server's reply), but they cannot be encoded to UTF-8: a retriever, a tokenizer or a JSON
    writer fails on them later, far from where they came in.
    """
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def bound_text(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters (at a word boundary when one is near), and how many were cut.

    The cut text ends with " …" so that a reader sees it was cut.
    """
    if len(text) <= limit:
        return text, 0
    head = text[: max(0, limit - 2)]
    space = head.rfind(" ")
    if space >= limit * 0.8:
        head = head[:space]
    return head.rstrip() + " …", len(text) - len(head)


def redacted_url(url: str) -> str:
    """``url`` with the password of its user part hidden: ``http://me:secret@host/`` -> ``http://me:…@host/``.

    Text that is not a ``scheme://`` URL, or names no password, comes back as it is. A password
    with an unescaped ``/`` (``me:pa/ss@host``) is hidden too, up to its ``@``.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    head = rest[: min((at for at in map(rest.find, "?#") if at >= 0), default=len(rest))]
    authority = head.partition("/")[0]
    userinfo = authority.rpartition("@")[0]
    if not userinfo and "@" in head and not authority.partition(":")[2].isdigit():  # "host:80/a@b" is a path
        userinfo = head.rpartition("@")[0]
    if ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:…@{rest[len(userinfo) + 1 :]}"
