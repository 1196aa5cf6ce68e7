"""The question as the graph receives it and as the prompts show it."""

from __future__ import annotations

from searchain_graph.method.prompts import QUESTION_SUFFIXES


class InvalidQuestionError(ValueError):
    """The question is empty, not text, or too long; the message says which."""


def validate_question(question: object, max_chars: int) -> str:
    """The question, whitespace-normalised.

    Raises:
        InvalidQuestionError: not a string, empty, or longer than ``max_chars``.
    """
    if not isinstance(question, str):
        raise InvalidQuestionError(f"question must be a string, got {type(question).__name__}")
    question = " ".join(question.split())
    if not question:
        raise InvalidQuestionError("question is empty")
    if len(question) > max_chars:
        raise InvalidQuestionError(
            f"question is {len(question)} characters long; the limit is {max_chars} (raise it with max_question_chars=)"
        )
    return question


def task_question(question: str, task: str) -> str:
    """The question as the prompts show it, with the task's answer-format suffix (Figures 9-10)."""
    suffix = QUESTION_SUFFIXES.get(task, "")
    if suffix and suffix.strip(" ?").lower() not in question.lower():
        return question + suffix
    return question
