"""Run one command against a throw-away PostgreSQL with pgvector (the pgserver wheel), then stop it.

    python scripts/with_pgserver.py -- sh -c 'vault-index eval ... --store "$PGSERVER_URL"'

For CI (.ci/run) and for trying the backend: the server lives in a fresh temporary folder, its URL
is in PGSERVER_URL for the command, and it is stopped and its folder deleted when the command
ends, fails, or this script is interrupted or terminated (SIGINT, SIGTERM). The exit status is
the command's. As root, pgserver runs the server as a `pgserver` system user (ADR 0017).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through `finally`: the server is stopped


def main(argv: list[str]) -> int:
    if "--" in argv:
        argv = argv[argv.index("--") + 1:]
    if not argv:
        print("usage: with_pgserver.py -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (it falls back to /tmp)
        warnings.simplefilter("ignore")
        import pgserver
    signal.signal(signal.SIGTERM, _terminate)
    folder = Path(tempfile.mkdtemp(prefix="vault-index-pgserver-"))
    server = None
    try:
        started = time.perf_counter()
        server = pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
        print(f"with_pgserver: PostgreSQL with pgvector up in {time.perf_counter() - started:.1f} s at {url}",
              file=sys.stderr, flush=True)
        child = subprocess.Popen(argv, env={**os.environ, "PGSERVER_URL": url})
        try:
            return child.wait()
        except BaseException:
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
        print("with_pgserver: server stopped, folder removed", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
