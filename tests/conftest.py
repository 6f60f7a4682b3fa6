"""Shared fixtures: tmp vaults and apps on a tmp index with the fake models from helpers.py."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import BIKE, GARDEN, OLD_RUNBOOK, SECRET, SOURDOUGH, FakeEmbedder, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App

# Document locks live in one folder per user (engine/files/fileio.machine_locks_dir); the suite and the
# processes it spawns share a throwaway one instead of the person's ~/.local/state.
os.environ.setdefault("VAULT_LOCK_DIR", tempfile.mkdtemp(prefix="vault-index-test-locks-"))
# Indexes, the invariants' stamp and the personal folder live under VAULT_INDEX_HOME (default
# ~/.mcp-memory); the suite keeps them in a throwaway one too (docs/adr/0012).
os.environ.setdefault("VAULT_INDEX_HOME", tempfile.mkdtemp(prefix="vault-index-test-home-"))
# A suite started as a background job (`nohup pytest &`) inherits SIGINT ignored, and so would every
# CLI it spawns: Python then installs no KeyboardInterrupt, and the Ctrl-C tests of `index` and `watch`
# hang or run to the end. A handler here (not inherited) gives the children the terminal's default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(scope="session")
def shipped_model_cache(tmp_path_factory) -> Path:
    """One model cache for the tests that use the shipped MiniLM but do not test how it is built
    (test_real_model.py and test_fp32_weights.py do): the fp32 graph is built once per run, not
    once per test (about 7 s each). Shared by the xdist workers of this run; builds of one cache by
    several processes at once are safe (engine/embedding/models.prepare_shipped_minilm)."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # pytest-N, never across runs
    return run / "shared-model-cache"


def _require_postgres_extra(server: bool = True) -> None:
    """Import the `postgres` extra (pgserver only with `server`), or skip the calling test saying so (fail under
    VAULT_REQUIRE_POSTGRES=1, as in CI). Tests reach it through a fixture, never at module level,
    so the README's `pytest -q` collects every module on a machine without the extra."""
    try:
        if server:
            with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (falls back to /tmp)
                warnings.simplefilter("ignore")
                import pgserver  # noqa: F401 - the `postgres` extra
        import psycopg  # noqa: F401
        from pgvector.psycopg import register_vector  # noqa: F401
    except ImportError as exc:
        if os.environ.get("VAULT_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"VAULT_REQUIRE_POSTGRES=1 but the postgres extra is missing: {exc}")
        pytest.skip(f"POSTGRESQL BACKEND NOT TESTED: {exc} (pip install -e '.[postgres]')")


@pytest.fixture(scope="session")
def pg_store_module():
    """vault_index.engine.stores.pg_store (it imports psycopg), for tests of its pure functions that need
    no server; skips like pg_server_url without the extra."""
    _require_postgres_extra(server=False)
    import vault_index.engine.stores.pg_store as pg_store

    return pg_store


# pytest-xdist (pyproject.toml's addopts: the suite runs on every core) starts one process per
# worker; they share one PostgreSQL server. The controller names its folder for the workers; each
# attaches through pgserver, which counts the processes using a data folder and stops the server
# after the last; the controller deletes the folder at the end.
PG_FOLDER = pytest.StashKey[str]()
PG_FOLDER_INPUT = "vault_index_pg_folder"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist, in the controller, per worker: the run's PostgreSQL folder (made once, pgdata inside
    made here too, so no two workers race to create it)."""
    config = node.config
    if PG_FOLDER not in config.stash:
        folder = Path(tempfile.mkdtemp(prefix="vault-index-pg-"))
        (folder / "pgdata").mkdir()
        config.stash[PG_FOLDER] = str(folder)
    node.workerinput[PG_FOLDER_INPUT] = config.stash[PG_FOLDER]


def pytest_unconfigure(config):
    """The controller, after every worker exited: the shared server's folder goes (stopped first
    if a worker died without stopping it)."""
    folder = config.stash.get(PG_FOLDER, None)
    if folder is None:
        return
    if (Path(folder) / "pgdata" / "postmaster.pid").exists():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pgserver

            pgserver.get_server(Path(folder) / "pgdata", cleanup_mode="delete").cleanup()
        except Exception as exc:  # noqa: BLE001 - say it; the folder goes anyway
            print(f"conftest: could not stop the shared PostgreSQL in {folder}: {exc}")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server_url(request):
    """A real PostgreSQL with pgvector for the whole session: VAULT_TEST_PG_URL when set, else a
    pgserver (PyPI wheel with initdb, postgres and vector.so) in a temporary folder, stopped and
    deleted at the end (under xdist: one server for all workers, above). Where it cannot start the
    PostgreSQL tests skip, saying why, unless VAULT_REQUIRE_POSTGRES=1 (CI sets it): then they fail."""
    url = os.environ.get("VAULT_TEST_PG_URL")
    if url:
        yield url
        return
    required = os.environ.get("VAULT_REQUIRE_POSTGRES") == "1"
    _require_postgres_extra()
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (it falls back to /tmp)
        warnings.simplefilter("ignore")
        import pgserver  # the `postgres` extra, present: _require_postgres_extra imported it
    shared = getattr(request.config, "workerinput", {}).get(PG_FOLDER_INPUT)
    folder = Path(shared) if shared else Path(tempfile.mkdtemp(prefix="vault-index-pg-"))
    try:
        # shared: "stop" (the controller deletes the folder; a delete here would race a worker attaching)
        server = pgserver.get_server(folder / "pgdata", cleanup_mode="stop" if shared else "delete")
    except Exception as exc:  # noqa: BLE001 - any failure to start: say it, skip or fail
        if required:
            pytest.fail(f"VAULT_REQUIRE_POSTGRES=1 but pgserver could not start: {exc}")
        pytest.skip(f"POSTGRESQL BACKEND NOT TESTED: pgserver could not start here ({exc})")
    yield server.get_uri()
    server.cleanup()
    if not shared:
        shutil.rmtree(folder, ignore_errors=True)


def database_url(server_url: str, name: str) -> str:
    """`server_url` pointing at the database `name` instead."""
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(server_url)._replace(path="/" + name))


@pytest.fixture(scope="session")
def pg_pool(pg_server_url):
    """Databases of the session, migrated once and emptied for each test that borrows one.

    Trigger: CREATE DATABASE plus DROP cost about 3 s a test here (2 busy cores). Why: the
    PostgreSQL half of a parametrised module then took minutes. Outcome: a borrowed database is
    emptied (TRUNCATE ... RESTART IDENTITY, HNSW indexes dropped) in milliseconds instead.
    """
    import uuid

    import psycopg
    from vault_index.engine.stores.pg_store import PgStore

    free: list[str] = []
    made: list[str] = []

    def borrow() -> str:
        if not free:
            name = f"t_{uuid.uuid4().hex[:16]}"
            with psycopg.connect(pg_server_url, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            made.append(name)
            PgStore(database_url(pg_server_url, name)).close()  # migrated once
            return name
        name = free.pop()
        with psycopg.connect(database_url(pg_server_url, name), autocommit=True) as db:
            db.execute("SET lock_timeout = 10000")  # a connection a test leaked: fail, do not hang
            for (index,) in db.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%'"
                                       ).fetchall():
                db.execute(f'DROP INDEX "{index}"')
            db.execute("TRUNCATE sources, checkouts, copies, removed_notes, files, chunks, embeddings, meta, problems, "
                       "edges, note_names, postings, term_stats RESTART IDENTITY CASCADE")
            db.execute("UPDATE keyword_stats SET chunks = 0, tokens = 0")
        return name

    yield borrow, free.append
    with psycopg.connect(pg_server_url, autocommit=True) as admin:
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_database(pg_server_url, pg_pool):
    """Factory: key -> URL of an empty (migrated) database of the session's server, the same one
    for the same key within a test; given back to the pool at teardown."""
    borrow, give_back = pg_pool
    made: dict[str, str] = {}

    def factory(key: str = "index") -> str:
        if key not in made:
            made[key] = borrow()
        return database_url(pg_server_url, made[key])

    yield factory
    for name in made.values():
        give_back(name)


@pytest.fixture
def backend() -> str:
    """The index backend of fixtures below: "sqlite" unless a test module parametrises it
    (`pytestmark = pytest.mark.parametrize("backend", helpers.BACKENDS)`)."""
    return "sqlite"


@pytest.fixture
def index_url(backend, request) -> Callable[[str], str | None]:
    """key -> VAULT_INDEX_URL of the backend under test (None for SQLite: the file is used)."""
    if backend == "sqlite":
        return lambda key="index": None
    return request.getfixturevalue("pg_database")


@pytest.fixture
def store_factory(tmp_path, index_url):
    """Factory: an index store of the backend under test (key: which index); closed at teardown."""
    from vault_index.engine.stores.store_contract import open_store

    opened = []

    def factory(key: str = "index"):
        store = open_store(tmp_path / f"{key}.db", index_url(key))
        opened.append(store)
        return store

    yield factory
    for store in opened:
        try:
            store.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass


@pytest.fixture
def open_app(tmp_path, index_url) -> Callable[..., App]:
    """Factory: App.open on tmp_path/index.db (or, where a module parametrises `backend`, a fresh
    PostgreSQL database) with the given (fake) models; closed at teardown."""
    from dataclasses import replace

    opened: list[App] = []

    def factory(embedder=None, reranker=None, db_name: str = "index.db") -> App:
        settings = replace(make_settings(tmp_path, db_name), index_url=index_url(db_name))
        app = App.open(settings, models=Models.fixed(embedder, reranker))
        opened.append(app)
        return app

    yield factory
    for app in opened:
        try:
            app.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass


@pytest.fixture
def vault(tmp_path) -> Path:
    """A small vault: nested headings, tags, a deprecated note, a subfolder and a secrets/ folder."""
    root = tmp_path / "vault"
    write(root, "garden.md", GARDEN)
    write(root, "bike.md", BIKE)
    write(root, "kitchen/sourdough.md", SOURDOUGH)
    write(root, "ops/old-runbook.md", OLD_RUNBOOK)
    write(root, "secrets/keys.md", SECRET)
    write(root, ".hidden/notes.md", "# Hidden\n\nzanzibarhidden text\n")
    return root


# Fixtures that exist only with an extra installed (the postgres extra, the Debian chromium of
# tests/ui): a test that uses one, directly or through another fixture, or runs on the PostgreSQL
# backend, is an `extras` test.
EXTRA_FIXTURES = frozenset({"pg_server_url", "pg_store_module", "chromium"})


def pytest_collection_modifyitems(config, items):
    """Mark the tests that need an extra as `extras` (the real-client modules mark themselves), so
    .ci/run runs them alone (`-m extras`) once it has installed the extras, after the README's
    `pytest -q` ran the whole suite without them."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if EXTRA_FIXTURES & set(getattr(item, "fixturenames", ())) or (
                callspec is not None and callspec.params.get("backend") == "postgresql"):
            item.add_marker(pytest.mark.extras)
