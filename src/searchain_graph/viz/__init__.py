"""Drawing the Tree-of-Reasoning: :func:`render_tree` for a finished run or one still going."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from searchain_graph._files import write_aside
from searchain_graph.viz.html import html_fragment, html_page
from searchain_graph.viz.markdown import markdown
from searchain_graph.viz.tree import VERDICTS, compact_run, tree_view

__all__ = ["VERDICTS", "compact_run", "render_tree", "tree_view", "write_tree"]

Format = Literal["html", "markdown", "fragment"]


def render_tree(output: Mapping[str, Any], format: Format = "html", *, title: str | None = None) -> str:
    """Draw a SearChain run's Tree-of-Reasoning (the paper's Figure 1).

    Args:
        output: The graph's output, or its state part way through a run: each round's branch,
            each node's verdict (pass, corrected, completed, duplicate, no passage), *g* and *f*
            against θ, the passage read, the feedback edges, the final content with its ``[n]``
            linked to the path's passages, and the warnings.
        format: ``"html"``: a self-contained page (inline CSS, no script, nothing fetched);
            ``"markdown"``: for notebooks and reports; ``"fragment"``: the HTML without the
            page around it.
        title: The page's title (HTML only).

    Raises:
        ValueError: an unknown format.

    Example:
        >>> out = graph.invoke({"question": "Where was the performer of Spirit If... born?"})  # doctest: +SKIP
        >>> Path("tree.html").write_text(render_tree(out))  # doctest: +SKIP
    """
    view = tree_view(output)
    if format == "html":
        return html_page(view, title=title)
    if format == "fragment":
        return html_fragment(view)
    if format == "markdown":
        return markdown(view)
    raise ValueError(f"format must be 'html', 'markdown' or 'fragment', got {format!r}")


def write_tree(
    output: Mapping[str, Any], path: str | Path, format: Format | None = None, *, title: str | None = None
) -> Path:
    """Render a run's tree into ``path``, written aside and then renamed (never half-written).

    Args:
        output: As for :func:`render_tree`.
        path: The file; its parent directories are created.
        format: As for :func:`render_tree`; by default Markdown for a ``.md`` file, else HTML.
        title: The page's title (HTML only).

    Returns:
        The path written.
    """
    target = Path(path)
    chosen: Format = format or ("markdown" if target.suffix.lower() in (".md", ".markdown") else "html")
    text = render_tree(output, chosen, title=title)
    return write_aside(target, text)
