"""Issue 22 (Low): connections that never finish their headers are closed, not held forever.
`vault-index serve --http` as a real process; 100 connections send half a request line and stop.
On the old code all of them were still open after the wait."""

from __future__ import annotations

import select
import socket
import time

import pytest
from remote_harness import make_vault, new_token, spawn

HELD = 100
# The server's timeout, shorter than the default 10 s (`--header-timeout`) so the test waits less;
# the slow client's pause between its two packets stays well under it.
TIMEOUT_S, SLOW_PAUSE_S = 3.0, 1.0
GRACE_S = 10.0  # how long past the timeout the held connections may take to be closed (a loaded machine)


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.5)
    try:
        return sock.recv(1024) == b""  # EOF: the server closed it
    except TimeoutError:
        return False  # still open, waiting
    except OSError:
        return True  # reset


def test_half_sent_headers_are_timed_out_and_a_slow_but_complete_request_is_served(tmp_path):
    _, env = make_vault(tmp_path)
    new_token(env, "owner")
    with spawn(env, "--header-timeout", str(TIMEOUT_S)) as base:
        host, port = base.removeprefix("http://").split(":")
        held = []
        for _ in range(HELD):
            sock = socket.create_connection((host, int(port)), timeout=10)
            sock.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0")
            held.append(sock)
        slow = socket.create_connection((host, int(port)), timeout=10)
        slow.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n")
        time.sleep(SLOW_PAUSE_S)
        slow.sendall(f"Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := slow.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        # Wait for the server to close them: done as soon as all are closed, failed after GRACE_S.
        still_open, deadline = set(held), time.monotonic() + TIMEOUT_S + GRACE_S
        while still_open and time.monotonic() < deadline:
            readable, _, _ = select.select(list(still_open), [], [], 0.5)  # closed (EOF or reset): readable
            still_open.difference_update(sock for sock in readable if closed_by_server(sock))
        for sock in held:
            sock.close()
        assert not still_open, f"{len(still_open)} of {HELD} half-open connections still held"  # old code: all


def test_header_timeout_option_reaches_the_protocol_and_refuses_non_positive(tmp_path, monkeypatch):
    from vault_index.errors import UsageError
    from vault_index.surfaces.cli import build_parser
    from vault_index.surfaces.cli_http import http_config
    from vault_index.surfaces.http_server import HEADER_TIMEOUT_S, HeaderTimeoutProtocol, uvicorn_options

    monkeypatch.setenv("VAULT_INDEX_DB", str(tmp_path / "index.db"))
    assert uvicorn_options()["http"] is HeaderTimeoutProtocol
    assert HeaderTimeoutProtocol.header_timeout_s == HEADER_TIMEOUT_S
    config = http_config(build_parser().parse_args(["serve", "--http", "8765", "--header-timeout", "2.5"]))
    protocol = uvicorn_options(config.header_timeout_s)["http"]
    assert issubclass(protocol, HeaderTimeoutProtocol) and protocol.header_timeout_s == 2.5
    assert HeaderTimeoutProtocol.header_timeout_s == HEADER_TIMEOUT_S  # the default class is untouched
    for bad in ("0", "-1", "nan"):
        with pytest.raises(UsageError, match="--header-timeout"):
            http_config(build_parser().parse_args(["serve", "--http", "8765", "--header-timeout", bad]))
