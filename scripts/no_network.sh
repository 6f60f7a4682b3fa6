#!/usr/bin/env bash
# Run a command (default: the test suite) with no network but loopback: issue 22, must-show 3.
#
#   scripts/no_network.sh                      # .venv/bin/python -m pytest -q
#   scripts/no_network.sh -- CMD ARGS...       # any command, e.g. a subset of the tests
#
# The command runs in a network namespace of its own (unshare): only `lo` exists there, brought
# up so the tests' local servers (uvicorn on 127.0.0.1, PostgreSQL, Unix sockets) still work, and
# any connection off the machine fails at once (ENETUNREACH). As root: `unshare --net`. Otherwise
# `unshare -rn` (a user namespace mapped to root: tests that need a second real uid skip there).
# Before the command runs, a probe checks that an outbound connection really fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--inside" ]; then
  shift
  ip link set lo up
  # the probe: a public address and a name must both be unreachable, loopback reachable
  python3 - <<'PY'
import socket
for target in (("1.1.1.1", 443), ("huggingface.co", 443), ("pypi.org", 443)):
    try:
        socket.create_connection(target, timeout=3).close()
    except OSError:
        continue
    raise SystemExit(f"no_network: {target[0]} is reachable; the namespace has a network")
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname(), timeout=3).close()
print("no_network: outbound connections fail, loopback works", flush=True)
PY
  # tests that need the package index (a real pip install) skip on this, saying where they run
  export VAULT_NO_NETWORK=1
  exec "$@"
fi

if [ "${1:-}" = "--" ]; then
  shift
fi
if [ "$#" -eq 0 ]; then
  set -- .venv/bin/python -m pytest -q
fi
if [ "$(id -u)" = 0 ]; then
  exec unshare --net -- "$0" --inside "$@"
fi
exec unshare --user --map-root-user --net -- "$0" --inside "$@"
