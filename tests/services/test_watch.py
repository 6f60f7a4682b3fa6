"""The watcher re-indexes files changed outside Claude Code (editor saves, git pull, deletes)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from helpers import FakeEmbedder, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.services.app import App
from vault_index.services.watch import Watcher

WAIT_SECONDS = 10.0


def wait_for(condition, timeout: float = WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def watched(tmp_path, vault):
    """A watcher running on its own thread over `vault`, plus a reader App on the same index."""
    embedder = FakeEmbedder()
    settings = make_settings(tmp_path)
    reader = App.open(settings, models=Models.fixed(embedder, None))
    reader.index([str(vault)])
    changes: list[tuple[str, str]] = []
    watcher = Watcher(lambda: App.open(settings, models=Models.fixed(embedder, None)),
                      debounce=0.1, on_change=lambda kind, path: changes.append((kind, path)))
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    assert watcher.ready.wait(WAIT_SECONDS)
    yield reader, watcher, changes
    stop.set()
    thread.join(timeout=WAIT_SECONDS)
    reader.close()
    assert not thread.is_alive()


def paths_for(app: App, query: str) -> list[str]:
    return [hit.path for hit in app.search(query, mode="keyword").hits]


def test_an_editor_save_is_searchable_without_any_hook(watched, vault):
    reader, watcher, _ = watched
    assert paths_for(reader, "quokkaweather") == []
    with open(vault / "garden.md", "a", encoding="utf-8") as fh:
        fh.write("\n## Visitors\n\nA quokkaweather station arrived in spring.\n")
    assert wait_for(lambda: paths_for(reader, "quokkaweather"))
    assert paths_for(reader, "quokkaweather")[0].endswith("garden.md")
    # counted when reindex_file returns, after its commit made the note searchable
    assert wait_for(lambda: watcher.stats.reindexed >= 1) and not watcher.stats.errors


def test_new_deleted_and_renamed_files_follow_the_disk(watched, vault):
    reader, watcher, _ = watched
    write(vault, "inbox/new-idea.md", "# New idea\n\nA zebrafinch feeder for the balcony.\n")
    assert wait_for(lambda: paths_for(reader, "zebrafinch"))

    os.replace(vault / "inbox/new-idea.md", vault / "inbox/renamed.md")  # what git and editors do
    assert wait_for(lambda: [p for p in paths_for(reader, "zebrafinch") if p.endswith("renamed.md")]
                    and not [p for p in paths_for(reader, "zebrafinch") if p.endswith("new-idea.md")])

    (vault / "inbox/renamed.md").unlink()
    assert wait_for(lambda: paths_for(reader, "zebrafinch") == [])
    assert watcher.stats.removed >= 1


def test_secret_and_hidden_files_stay_out(watched, vault):
    reader, watcher, changes = watched
    write(vault, "secrets/token.md", "# Token\n\nmarmosetsecret value\n")
    write(vault, ".hidden/more.md", "# More\n\nmarmosetsecret again\n")
    write(vault, "visible.md", "# Visible\n\ncapybaravisible line\n")  # a sentinel that does land
    assert wait_for(lambda: paths_for(reader, "capybaravisible"))
    assert paths_for(reader, "marmosetsecret") == []
    assert not any("secrets" in path or ".hidden" in path for _, path in changes)


def test_a_deleted_folder_triggers_a_sync(watched, vault):
    reader, watcher, _ = watched
    assert paths_for(reader, "sourdough")
    for child in (vault / "kitchen").iterdir():
        child.unlink()
    (vault / "kitchen").rmdir()
    assert wait_for(lambda: paths_for(reader, "sourdough") == [])


def test_changes_made_while_not_watching_are_caught_up(tmp_path, vault):
    embedder = FakeEmbedder()
    settings = make_settings(tmp_path)
    reader = App.open(settings, models=Models.fixed(embedder, None))
    reader.index([str(vault)])
    write(vault, "offline.md", "# Offline\n\nwombatoffline was written while nobody watched.\n")
    watcher = Watcher(lambda: App.open(settings, models=Models.fixed(embedder, None)), debounce=0.1)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert watcher.ready.wait(WAIT_SECONDS)
        assert paths_for(reader, "wombatoffline")  # the catch-up sync ran before `ready`
    finally:
        stop.set()
        thread.join(timeout=WAIT_SECONDS)
        reader.close()
