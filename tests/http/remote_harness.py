"""Helpers for the HTTP tests: a vault with roles, tokens made by the real CLI, a real server.

Two ways to run the server, both real uvicorn on 127.0.0.1 and a free port:
- `spawn` starts `vault-index serve --http` as a process (the CLI path end to end);
- `ThreadServer` runs the same ASGI app in a thread of the test process, so an OAuth test can move
  the authorization server's clock (expired codes) without sleeping.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import anyio
import httpx
from helpers import CLI, cli_env, write

START_TIMEOUT_S = 90  # a cold start imports the SDK: 4 s of CPU, over 30 s of wall time at load 15
CALL_TIMEOUT_S = 60
CONFIG = """\
version: 1
vault_name: remote
collections: [notes, private]
roles:
  owner: {read: ["*"], write: ["*"], promote: true}
  reader: {read: [notes]}
local_role: owner
"""
NOTE = ("---\ntitle: {title}\nstatus: draft\nconfidence: medium\ncreated: 2026-11-01\nupdated: 2026-11-01\n"
        "sources: [http-test]\nttl_days: 90\n---\n# {title}\n\n{words}\n")


def make_vault(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A vault with two roles and indexed notes; the env every CLI call and server of it uses."""
    root = tmp_path / "vault"
    write(root, ".vault-index/config.yaml", CONFIG)
    write(root, "notes/bikes.md", NOTE.format(title="Bikes", words="brake pads wear a groove in the rim"))
    write(root, "private/diary.md", NOTE.format(title="Diary", words="brake secret entry"))
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(root), VAULT_MEMORY_FILE=str(tmp_path / "mem.jsonl"))
    env.pop("VAULT_ROLE", None)
    done = subprocess.run([CLI, "index", str(root), "-s"], env=env, cwd=root, capture_output=True, text=True,
                          timeout=CALL_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return root, env


def new_token(env: dict, role: str) -> dict:
    done = subprocess.run([CLI, "token", "new", "--role", role, "--json"], env=env, capture_output=True, text=True,
                          timeout=CALL_TIMEOUT_S, cwd=env["CLAUDE_PROJECT_DIR"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(base: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}: {process.stderr.read()}")
        try:
            if httpx.get(base + "/.well-known/oauth-protected-resource/mcp", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"server at {base} did not answer within {START_TIMEOUT_S} s")


@contextlib.contextmanager
def spawn(env: dict, *args: str):
    """`vault-index serve --http 127.0.0.1:PORT ARGS`; yields the base URL; stopped at exit."""
    port = free_port()
    process = subprocess.Popen([CLI, "serve", "--http", f"127.0.0.1:{port}", *args], env=env,
                               cwd=env["CLAUDE_PROJECT_DIR"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stderr.close()


class ThreadServer:
    """The ASGI app of surfaces/http.py under uvicorn in a thread (real sockets, movable clock)."""

    def __init__(self, app, config, clock=None, vault_root=None, memory_file=None):
        import uvicorn
        from vault_index.surfaces.http import build_http_app

        asgi = build_http_app(app, config, memory_file=memory_file, vault_root=vault_root, clock=clock)
        self.server = uvicorn.Server(uvicorn.Config(asgi, host=config.host, port=config.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.base = f"http://127.0.0.1:{config.port}"

    def __enter__(self):
        self.thread.start()
        wait_ready(self.base)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=15)


async def open_client(url: str, token: str | None, mode: str):
    """An SDK client (mode legacy, auto or 2026-07-28) with a bearer header; use with `async with`."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from mcp import Client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    stack = contextlib.AsyncExitStack()
    http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
    client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
    return stack, client


def run(fn, *args, timeout: float = CALL_TIMEOUT_S):
    async def bounded():
        with anyio.fail_after(timeout):
            return await fn(*args)

    return anyio.run(bounded)
