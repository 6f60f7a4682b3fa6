"""The hooks' input and exit plumbing, importing `os` and `sys` only (`json` when a payload is parsed).

The re-index hook runs after every edit and, while a server runs, only reads its payload and
sends the note's path over a socket: this is all it imports before that besides json (pathlib
and the transcript reader in _hooklib.py cost it tens of milliseconds more under load).
_hooklib.py re-exports everything here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# The same set as vault_index.engine.files.sources.NOTE_SUFFIXES (a test keeps them equal): the
# re-index hook skips other files before it imports the package.
NOTE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt"})


def ensure_package() -> None:
    """Make `import vault_index` work from a clone whose package is not installed."""
    try:
        import vault_index  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "mcp"))


def read_raw() -> bytes:
    """The hook's stdin as bytes; b"" when there is none or it cannot be read."""
    try:
        stream = sys.stdin.buffer if sys.stdin is not None else None
        return stream.read() if stream is not None else b""
    except (OSError, ValueError):
        return b""


def parse_payload(raw: bytes) -> dict:
    """The JSON object in `raw`; {} for empty, non-JSON, non-UTF-8 or non-object input."""
    import json

    try:
        data = json.loads(raw.decode("utf-8", errors="replace")) if raw.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def read_payload() -> dict:
    """The hook's JSON object; {} for empty, non-JSON, non-UTF-8 or non-object input."""
    return parse_payload(read_raw())


def text(mapping: object, key: str) -> str:
    """mapping[key] when mapping is a dict and the value a string, else ""."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, str) else ""


def warn(message: str) -> None:
    """One line on stderr (Claude Code shows hook stderr in verbose mode only)."""
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0] if sys.argv and sys.argv[0] else "hook"
    print(f"{name}: {' '.join(str(message).split())}", file=sys.stderr)


def run(main: Callable[[], object]) -> None:
    """Run a hook's main and exit 0 whatever happens: a hook must never break the session."""
    try:
        main()
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - the one place that turns every failure into a line
        try:
            warn(f"{type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001 - stderr gone too
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed pipe must not turn into exit 120
            pass
    # os._exit: interpreter shutdown would flush a broken stdout again and exit non-zero.
    os._exit(0)
