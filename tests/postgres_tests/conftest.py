"""The PostgreSQL server the tests of ``searchain serve --db postgresql://`` run against.

``SEARCHAIN_TEST_POSTGRES`` names it (``.ci/postgres start`` starts one and prints the variable);
each test gets a database of its own on it, dropped afterwards. Without the variable, or without
psycopg, the tests skip, unless ``SEARCHAIN_REQUIRE_POSTGRES=1`` (as in ``.ci/run``), where a
missing server is a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

SERVER_ENV = "SEARCHAIN_TEST_POSTGRES"


def _server() -> str:
    url = os.environ.get(SERVER_ENV, "")
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        missing = f"psycopg or langgraph-checkpoint-postgres is not installed ({exc})"
    else:
        missing = "" if url else f"${SERVER_ENV} names no PostgreSQL server (.ci/postgres start)"
    if missing:
        if os.environ.get("SEARCHAIN_REQUIRE_POSTGRES") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL of a new, empty database on the test server (dropped after the test)."""
    import psycopg

    server = _server()
    name = f"searchain_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
