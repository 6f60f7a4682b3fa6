"""Issue 22 (Low): hostile bodies get 400/413, never a 500: a deeply nested JSON body on /mcp and
/register, an oversized chunked (no Content-Length) /register or /token body. Real uvicorn. On the
old code each of these answered 500."""

from __future__ import annotations

import httpx
import pytest
from helpers import write
from remote_harness import ThreadServer, free_port
from vault_index.services.access.tokens import TokenStore
from vault_index.surfaces.http_config import HttpConfig

ACCEPT = "application/json, text/event-stream"
DEEP = b"[" * 5000 + b"]" * 5000  # 10 KB: under every body limit, past json's recursion limit


@pytest.fixture
def served(tmp_path, open_app):
    root = tmp_path / "vault"
    write(root, "notes/a.md", "# a\n\nalpha\n")
    store = TokenStore(tmp_path / "index.remote")
    token, _ = store.new("owner", vault=root)
    config = HttpConfig(port=free_port(), credentials=store.folder, rate_per_s=0)
    with ThreadServer(open_app(None), config, vault_root=root, memory_file=tmp_path / "m.jsonl") as running:
        running.token = token
        yield running


def chunked(size: int):
    def body():
        yield b'{"redirect_uris":["https://claude.ai/cb"],"client_name":"'
        for _ in range(size // 1000):
            yield b"y" * 1000
        yield b'"}'
    return body()


def test_a_deeply_nested_body_is_a_400(served):
    s = served
    mcp = httpx.post(s.base + "/mcp", content=DEEP, timeout=30,
                     headers={"Authorization": f"Bearer {s.token}", "Accept": ACCEPT,
                              "Content-Type": "application/json"})
    assert mcp.status_code == 400 and mcp.json()["error"]["code"] == -32700, mcp.text
    register = httpx.post(s.base + "/register", content=b'{"redirect_uris":' + DEEP + b"}", timeout=30,
                          headers={"Content-Type": "application/json"})
    assert register.status_code == 400, register.text


@pytest.mark.parametrize("path", ["/register", "/token", "/oauth/consent"])
def test_an_oversized_chunked_body_is_a_413(served, path):
    answer = httpx.post(served.base + path, content=chunked(40_000), timeout=30,
                        headers={"Content-Type": "application/json" if path == "/register"
                                 else "application/x-www-form-urlencoded"})
    assert answer.status_code == 413, (answer.status_code, answer.text[:200])
    assert httpx.get(served.base + "/.well-known/oauth-authorization-server", timeout=30).status_code == 200
