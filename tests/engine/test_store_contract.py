"""Both index stores implement engine/stores/store_contract.IndexStore, method for method."""

from __future__ import annotations

import inspect

import pytest
from vault_index.engine.files.local_paths import LocalPaths
from vault_index.engine.stores.store import Store
from vault_index.engine.stores.store_contract import IndexStore, open_store
from vault_index.engine.stores.urls import is_postgres_url, redact
from vault_index.errors import UsageError


def _contract_methods() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(IndexStore).items()
            if callable(member) and not name.startswith("_")}


def _check(cls) -> None:
    for name, wanted in _contract_methods().items():
        assert hasattr(cls, name), f"{cls.__name__} lacks {name}"
        got = inspect.signature(inspect.unwrap(getattr(cls, name)))
        assert list(got.parameters) == list(wanted.parameters), f"{cls.__name__}.{name}: {got} != {wanted}"


def test_sqlite_store_implements_the_contract(tmp_path):
    _check(Store)
    _check(LocalPaths)
    store = open_store(tmp_path / "i.db")
    assert isinstance(store, LocalPaths) and isinstance(store.inner, Store) and isinstance(store, IndexStore)
    assert store.kind == "sqlite" and store.location == str(tmp_path / "i.db")
    assert store.size_bytes() > 0 and store.open_vector_index("m") is None
    store.close()


def test_postgres_store_implements_the_contract(pg_store_module):
    _check(pg_store_module.PgStore)


def test_a_url_that_is_not_postgresql_is_refused_with_its_password_hidden(tmp_path):
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    assert not is_postgres_url("sqlite:///x.db") and not is_postgres_url(None)
    with pytest.raises(UsageError, match=r"mysql://me:\*\*\*@host/db"):
        open_store(tmp_path / "i.db", "mysql://me:secret@host/db")
    assert redact("postgresql://me:secret@host:5432/db") == "postgresql://me:***@host:5432/db"


def test_a_postgresql_app_reports_status_without_loading_numpy_or_pgvector(pg_database, tmp_path):
    """The MCP server builds its instructions from status() before the handshake: on PostgreSQL
    that costs psycopg, never numpy or pgvector (they load at the first vector call)."""
    import os
    import subprocess
    import sys

    script = ("import sys\nfrom vault_index.services.app import App\nstatus = App.open().status()\n"
              "print(status['db'], status['files'], status['vector_backend'], "
              "'numpy' in sys.modules, 'pgvector' in sys.modules)")
    env = {**os.environ, "VAULT_INDEX_URL": pg_database(), "VAULT_INDEX_DB": str(tmp_path / "unused.db"),
           "VAULT_EMBED_MODEL": "none"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1:] == ["0", "pgvector", "False", "False"]
    assert not (tmp_path / "unused.db").exists()  # the SQLite file is not made beside it
