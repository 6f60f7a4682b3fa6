"""Test helpers: the deterministic fake models (the only fakes in the suite), vault text, snapshots."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import numpy as np
from vault_index.config import Settings

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
CLI = str(VENV_BIN / "vault-index")

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


BACKENDS = ("sqlite", "postgresql")  # index backends a test module can parametrise (conftest `backend`)


class FakeEmbedder:
    """Bag of words hashed into `dim` buckets, L2-normalised; counts every text it embeds."""

    def __init__(self, fingerprint: str = "fake-bow-64", dim: int = 64, max_tokens: int = 512):
        self.fingerprint = fingerprint
        self.max_tokens = max_tokens
        self.dim = dim
        self.embedded: list[str] = []  # every document text embedded, in order
        self.queries: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for word in words(text):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.embedded.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self._vector(text)

    @property
    def count(self) -> int:
        return len(self.embedded)


class FakeReranker:
    """Deterministic cross-encoder stand-in: score = occurrences of query words in the document."""

    name = "fake-rerank"

    def __init__(self):
        self.calls: list[tuple[str, list[str]]] = []

    @staticmethod
    def score_one(query: str, document: str) -> float:
        wanted = set(words(query))
        return float(sum(1 for w in words(document) if w in wanted))

    def score(self, query: str, documents: list[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        return [self.score_one(query, d) for d in documents]


def make_settings(tmp_path: Path, db_name: str = "index.db") -> Settings:
    return Settings(
        db_path=tmp_path / db_name,
        embed_model="none",
        rerank_model="none",
        rerank=False,
        model_cache=tmp_path / "models",
        vector_backend="auto",
        memory_file=tmp_path / "memory.jsonl",  # never the user's ~/.mcp-memory graph
    )


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GARDEN = """---
title: Garden soil
tags: [garden, Soil]
status: canonical
---
Preamble about the vegetable beds and compost.

# Garden

## Soil

Loam drains well; clay holds moisture. The sensor reads capacitance.

### Moisture sensor

The capacitive probe corrodes less than the resistive fork probe.

## Watering

Drip irrigation on a timer, twice a week in summer.
"""

BIKE = """# Bike maintenance

## Chain

Clean the chain with degreaser, then lube every derailleur pulley.

## Brakes

Replace the brake pads when the groove wears away. Bleed hydraulic brakes yearly.

## Tyres

Tubeless tyres need fresh sealant every six months.
"""

SOURDOUGH = """---
tags: baking
status: draft
---
# Sourdough

Feed the starter with rye flour the night before; bake at 250 degrees in a dutch oven.
"""

OLD_RUNBOOK = """---
status: deprecated
---
# Runbook

Restart the postgres replica with pg_ctl and check the replication lag.
"""

SECRET = """# API keys

zanzibarkey = 12345 (never index me)
"""


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Bytes and mtime (ns) of every file under root (symlinks recorded, not followed)."""
    state: dict[str, tuple[bytes | None, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = path.lstat()
            if path.is_symlink():
                state[str(path)] = (os.readlink(path).encode(), info.st_mtime_ns)
            elif path.is_file():
                state[str(path)] = (path.read_bytes(), info.st_mtime_ns)
    return state


def fresh_machine(monkeypatch, tmp_path: Path, rerank: bool = True) -> Path:
    """A fresh HOME and index for the workspace tests, no project or vault named, no model; the HOME."""
    for name in ("VAULT_PROJECT", "CLAUDE_PROJECT_DIR", "VAULT_CONTENT_DIR", "VAULT_ROLE", "VAULT_MEMORY_FILE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("VAULT_INDEX_HOME", str(home / ".mcp-memory"))
    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    monkeypatch.setenv("VAULT_EMBED_MODEL", "none")
    if not rerank:
        monkeypatch.setenv("VAULT_RERANK", "0")
    return home


def opened(monkeypatch, folder: Path | None):
    """An App as a session in `folder` opens it (CLAUDE_PROJECT_DIR), or as the terminal with none."""
    from vault_index.services.app import App

    if folder is None:
        monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    else:
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(folder))
    return App.open(Settings.from_env())


def found(app, word: str) -> set[str]:
    """The paths a keyword search for `word` returns in `app`'s workspace."""
    return {hit.path for hit in app.search(word, "keyword", 20).hits}


def note(folder: Path, name: str, text: str) -> Path:
    """A note titled by its file name, with `text` as its body."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    return folder / name


def cli_env(db: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        VAULT_INDEX_DB=str(db),
        VAULT_EMBED_MODEL="none",
        VAULT_RERANK="0",
        HF_HUB_OFFLINE="1",
        VAULT_MODEL_CACHE=str(db.parent / "models"),
    )
    env.update(extra)
    return env


def claude_cli() -> str | None:
    """The Claude Code CLI the bundle tests drive: $CLAUDE_CLI, else `claude` on PATH (CI: npm)."""
    import shutil

    return os.environ.get("CLAUDE_CLI") or shutil.which("claude")


def load_setup():
    """The repository's setup.py (a script, not a package module) loaded as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("vault_index_setup", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def copy_checkout(dest: Path) -> None:
    """The working tree's files (tracked and new, not ignored) copied to `dest`: a fresh clone of
    what is being tested, uncommitted changes included."""
    import shutil
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def deprecated_pair(root: Path) -> None:
    """Two notes with the same body, the deprecated one indexed first (lower chunk id), so it would
    win every tie without the deprecation penalty."""
    body = "# Deploy\n\nRoll out the recipe app with blue green switching on the load balancer.\n"
    write(root, "a-old.md", "---\nstatus: deprecated\n---\n" + body)
    write(root, "b-new.md", "---\nstatus: canonical\n---\n" + body)
