"""Must-show 2: a note or a folder swapped for a symlink to an outside file, thousands of times,
while get_note, re-indexing, full syncs and searches run, in threads and in other processes.

The outside files carry a unique marker word. It must never appear in any answer (note content,
snippets, error text) nor anywhere in the index file's bytes (a row indexed and later deleted
leaves its bytes in free pages, so the byte scan also catches a leak that was "cleaned up").
Before the no-follow open, get_note checked the resolved path and then opened it again by name,
and the indexer read by name too: this test caught outside bytes within a second or two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path

from helpers import REPO, make_settings, write
from vault_index.engine.embedding.models import Models
from vault_index.errors import VaultIndexError
from vault_index.services.app import App

# per phase (threads, then processes): the least time each phase races; the count below is the
# must-show (the unfixed code leaked within a second or two). VAULT_FAULTS_FULL=1: 9 s, as before.
RACE_SECONDS = 9.0 if os.environ.get("VAULT_FAULTS_FULL") else 3.0
MIN_ATTEMPTS = 1000  # reads and re-indexes per phase, and swaps per phase
# Trigger: a phase bounded only by RACE_SECONDS made 508 and 892 attempts at load 15 (2 cores
# shared), and the count check failed with no leak found. Why: the must-show is a count
# (thousands of attempts), not a time. Outcome: each worker races RACE_SECONDS and then on until
# it has done its share of MIN_ATTEMPTS, up to MAX_RACE_SECONDS; swappers go on until the readers
# are done.
MAX_RACE_SECONDS = 150.0
JOIN_TIMEOUT_S = MAX_RACE_SECONDS + 60
READERS, SWAPPERS = 2, 4  # per phase


def _share(workers: int) -> int:
    return -(-MIN_ATTEMPTS // workers)


SWAPPER = ("import sys; sys.path[:0] = sys.argv[1:3]; from test_symlink_race import swap_loop; "
           "print(swap_loop(*sys.argv[3:8], int(sys.argv[8])))")


def swap_loop(kind: str, path: str, target: str, content: str, stop: str, share: int) -> int:
    """Swap `path` for a link to `target` and back, as fast as renames allow, until the file
    `stop` exists and `share` swaps are done (at most MAX_RACE_SECONDS)."""
    cap, swaps, tmp = time.monotonic() + MAX_RACE_SECONDS, 0, path + ".swap"
    while (swaps < share or not os.path.exists(stop)) and time.monotonic() < cap:
        try:
            if kind == "file":  # the note becomes a link out, then a real file again (each by rename)
                os.symlink(target, tmp)
                os.replace(tmp, path)
                with open(tmp, "w", encoding="utf-8") as handle:
                    handle.write(content)
                os.replace(tmp, path)
            else:  # the folder is moved away and a link to the outside folder takes its name
                os.rename(path, tmp)
                os.symlink(target, path)
                os.unlink(path)
                os.rename(tmp, path)
            swaps += 1
        except OSError:
            pass
    return swaps


READER = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from helpers import make_settings
from vault_index.engine.embedding.models import Models
from vault_index.errors import VaultIndexError
from vault_index.services.app import App
tmp, vault, marker, seconds = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], float(sys.argv[5])
share, cap = int(sys.argv[6]), float(sys.argv[7])
app = App.open(make_settings(tmp), models=Models.fixed(None))
seen, attempts, started = [], 0, time.monotonic()
while (time.monotonic() < started + seconds or attempts < share) and time.monotonic() < started + cap:
    for rel in ("a/note.md", "b/note.md", "c/deep.md", "d/deep.md"):
        attempts += 1
        try:
            seen.append(app.get_note(rel)["content"])
            app.reindex_file(str(vault / rel))
        except VaultIndexError as exc:
            seen.append(str(exc))
    seen.extend(h.snippet for h in app.search(marker, mode="keyword").hits)
    seen = [text for text in seen if marker in text]
app.close()
print(json.dumps({"attempts": attempts, "leaks": seen[:5]}))
"""


def _setup(tmp_path: Path) -> tuple[Path, str, dict[str, tuple[str, Path, str]]]:
    marker = "outsidemarker" + uuid.uuid4().hex
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    secret = write(outside, "secret.md", f"# Outside\n\n{marker} must never be served\n")
    write(outside, "deep.md", f"# Outside deep\n\n{marker} in a folder outside\n")
    targets = {}
    for name in ("a", "b"):
        text = f"# Note {name}\n\ninsidesafe words in note {name}\n"
        write(vault, f"{name}/note.md", text)
        targets[name] = ("file", vault / name / "note.md", text, secret)
    for name in ("c", "d"):
        write(vault, f"{name}/deep.md", f"# Deep {name}\n\ninsidesafe deep words\n")
        targets[name] = ("dir", vault / name, "", outside)
    write(vault, "steady.md", "# Steady\n\ninsidesafe steady note\n")
    return vault, marker, {k: (kind, path, text, target) for k, (kind, path, text, target) in targets.items()}


def _swap_in_thread(kind: str, path: Path, target: Path, content: str, stop: Path, counts: list) -> None:
    counts.append(swap_loop(kind, str(path), str(target), content, str(stop), _share(SWAPPERS)))


def _reader(tmp_path: Path, vault: Path, marker: str, seconds: float, found: list, attempts: list,
            crashes: list, index: bool) -> None:
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    count, started, share = 0, time.monotonic(), _share(READERS)
    try:
        while ((time.monotonic() < started + seconds or count < share)
               and time.monotonic() < started + MAX_RACE_SECONDS):
            for rel in ("a/note.md", "b/note.md", "c/deep.md", "d/deep.md"):
                count += 1
                try:
                    if index:
                        app.reindex_file(str(vault / rel))
                    found.append(app.get_note(rel)["content"])
                except VaultIndexError as exc:
                    found.append(str(exc))
            if index:
                report = app.index(None)
                found.extend(m for _, m in report.problems)
            found.extend(h.snippet for h in app.search(marker, mode="keyword").hits)
            found.extend(h.snippet for h in app.search("insidesafe", mode="keyword", limit=20).hits)
            found[:] = [text for text in found if marker in text]
    except Exception:  # noqa: BLE001 - reported by the test, with its traceback
        crashes.append(traceback.format_exc())
    finally:
        app.close()
        attempts.append(count)


def _index_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("index.db*") if p.is_file())


def test_symlink_swaps_never_serve_or_index_outside_bytes(tmp_path):
    vault, marker, targets = _setup(tmp_path)
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    first = app.index([str(vault)])
    assert first.indexed == 5
    app.close()

    # Phase 1: threads only (swappers and readers share this process).
    found, attempts, crashes, swaps = [], [], [], []
    stop = tmp_path / "stop-threads"
    swappers = [threading.Thread(target=_swap_in_thread, args=(kind, path, target, text, stop, swaps))
                for kind, path, text, target in targets.values()]
    readers = [threading.Thread(target=_reader, args=(tmp_path, vault, marker, RACE_SECONDS, found, attempts,
                                                      crashes, index)) for index in (False, True)]
    assert (len(readers), len(swappers)) == (READERS, SWAPPERS)
    workers = [*swappers, *readers]
    for worker in workers:
        worker.start()
    for worker in readers:
        worker.join(JOIN_TIMEOUT_S)
    stop.touch()  # the readers are done: the swappers stop once they have done their share
    for worker in swappers:
        worker.join(JOIN_TIMEOUT_S)
    assert not any(w.is_alive() for w in workers), "a racing thread did not finish"
    assert crashes == [], crashes[0] if crashes else ""
    assert found == [], f"outside bytes served: {found[:3]}"
    assert sum(attempts) >= MIN_ATTEMPTS and sum(swaps) >= MIN_ATTEMPTS, (attempts, swaps)
    thread_numbers = (sum(attempts), sum(swaps))

    # Phase 2: processes (swappers and a reader in their own interpreters) and a reader thread here.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "mcp"), os.environ.get("PYTHONPATH", "")])}
    here_dirs = [str(Path(__file__).parent), str(REPO / "tests")]
    stop = tmp_path / "stop-processes"
    swappers = [subprocess.Popen([sys.executable, "-c", SWAPPER, *here_dirs, kind, str(path), str(target), text,
                                  str(stop), str(_share(SWAPPERS))], stdout=subprocess.PIPE, text=True, env=env)
                for kind, path, text, target in targets.values()]
    reader = subprocess.Popen([sys.executable, "-c", READER, str(REPO / "tests"), str(tmp_path), str(vault), marker,
                               str(RACE_SECONDS), str(_share(READERS)), str(MAX_RACE_SECONDS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    found, attempts, crashes = [], [], []
    here = threading.Thread(target=_reader, args=(tmp_path, vault, marker, RACE_SECONDS, found, attempts,
                                                   crashes, True))
    here.start()
    try:
        out, err = reader.communicate(timeout=JOIN_TIMEOUT_S)
        here.join(JOIN_TIMEOUT_S)
        stop.touch()
        process_swaps = sum(int(p.communicate(timeout=JOIN_TIMEOUT_S)[0].strip() or 0) for p in swappers)
    finally:
        for process in [*swappers, reader]:
            if process.poll() is None:
                process.kill()
        here.join(JOIN_TIMEOUT_S)
    assert reader.returncode == 0 and "Traceback" not in err, err
    answer = json.loads(out)
    assert crashes == [] and not here.is_alive()
    assert found == [] and answer["leaks"] == [], f"outside bytes served: {(found or answer['leaks'])[:3]}"
    assert answer["attempts"] + sum(attempts) >= MIN_ATTEMPTS and process_swaps >= MIN_ATTEMPTS

    # Afterwards: every note is back, the vault is fully indexed, and the marker is nowhere in the index.
    app = App.open(make_settings(tmp_path), models=Models.fixed(None))
    try:
        app.index(None)
        assert {Path(h.path).name for h in app.search("insidesafe", mode="keyword", limit=20).hits} == {
            "note.md", "deep.md", "steady.md"}
        assert app.store.counts()["files"] == 5
        assert app.search(marker, mode="keyword").hits == ()
    finally:
        app.close()
    assert marker.encode() not in _index_bytes(tmp_path)
    print(f"threads: {thread_numbers[0]} reads/re-indexes, {thread_numbers[1]} swaps; "
          f"processes: {answer['attempts'] + sum(attempts)} reads/re-indexes, {process_swaps} swaps")
