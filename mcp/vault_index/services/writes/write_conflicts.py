"""The answer to a write that lost a race with a person's save (engine/files/guarded_replace.py).

The person's file is left as they saved it; the text the write would have put there is kept
beside it as a hidden `.NAME.unsaved-<version>` (never indexed, never a note), and the caller is
told stale with the version now on disk, so a retry starts from the person's text.
"""

from __future__ import annotations

from vault_index.engine.files import fileio


def lost_race(target, folder: int, data: bytes, version: str | None, changed):
    from vault_index.services.writes.write_types import WriteOutcome

    now = fileio.file_version(changed.current)
    kept = f".{target.parts[-1]}.unsaved-{fileio.file_version(data)}"
    try:
        fileio.atomic_replace(folder, kept, data)
        where = "/".join((*target.parts[:-1], kept))
        saved = f"; the text of this write is kept in {where}"
    except OSError as exc:
        where, saved = None, f"; the text of this write could not be kept ({exc.strerror or exc})"
    return WriteOutcome("stale", target.rel, f"{target.rel} changed on disk while this write was made (version "
                        f"{version}, now {now}); it was not replaced{saved} - read it again and redo the change",
                        version=now, result={"base_version": version, "unsaved": where})
