"""The answer to a write that lost a race with a person's save (engine/files/guarded_replace.py).

The person's file is left as they saved it; the text the write would have put there is kept
beside it as a hidden `.NAME.unsaved-<version>` (never indexed, never a note), and the caller is
told stale with the version now on disk, so a retry starts from the person's text.

Trigger: every lost race left its own `.NAME.unsaved-<version>`, and none was ever removed
(hundreds beside one note after seconds of racing, issue 36). Why: only the newest matters (a
retry starts from the person's text; older attempts were composed against older text still).
Outcome: one kept file per note: writing the newest removes the older ones, and the answer says so.
"""

from __future__ import annotations

import os
import re
from contextlib import suppress

from vault_index.engine.files import fileio

_KEPT = re.compile(rf"\.unsaved-[0-9a-f]{{{fileio.VERSION_CHARS}}}")


def lost_race(target, folder: int, data: bytes, version: str | None, changed):
    from vault_index.services.writes.write_types import WriteOutcome

    now = fileio.file_version(changed.current)
    kept = f".{target.parts[-1]}.unsaved-{fileio.file_version(data)}"
    try:
        fileio.atomic_replace(folder, kept, data)
        where = "/".join((*target.parts[:-1], kept))
        dropped = _drop_older(folder, target.parts[-1], kept)
        older = f" (it replaces {dropped} older unsaved cop{'y' if dropped == 1 else 'ies'} of this note)"
        saved = f"; the text of this write is kept in {where}" + (older if dropped else "")
    except OSError as exc:
        where, saved = None, f"; the text of this write could not be kept ({exc.strerror or exc})"
    return WriteOutcome("stale", target.rel, f"{target.rel} changed on disk while this write was made (version "
                        f"{version}, now {now}); it was not replaced{saved} - read it again and redo the change",
                        version=now, result={"base_version": version, "unsaved": where})


def _drop_older(folder: int, name: str, newest: str) -> int:
    """Remove the note's other kept copies (the caller holds its document lock); how many went."""
    prefix = f".{name}"
    with os.scandir(folder) as entries:
        older = [e.name for e in entries if e.name != newest and e.name.startswith(prefix)
                 and _KEPT.fullmatch(e.name[len(prefix):]) and e.is_file(follow_symlinks=False)]
    removed = 0
    for other in older:
        with suppress(FileNotFoundError):
            os.unlink(other, dir_fd=folder)
            removed += 1
    return removed
