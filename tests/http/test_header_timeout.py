"""Issue 22 (Low): connections that never finish their headers are closed, not held forever.
`vault-index serve --http` as a real process; 100 connections send half a request line and stop.
On the old code all of them were still open after the wait."""

from __future__ import annotations

import socket
import time

from remote_harness import make_vault, new_token, spawn
from vault_index.surfaces.http_server import HEADER_TIMEOUT_S

HELD = 100


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
    with spawn(env) as base:
        host, port = base.removeprefix("http://").split(":")
        held = []
        for _ in range(HELD):
            sock = socket.create_connection((host, int(port)), timeout=10)
            sock.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0")
            held.append(sock)
        slow = socket.create_connection((host, int(port)), timeout=10)
        slow.sendall(b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n")
        time.sleep(1)
        slow.sendall(f"Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := slow.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        time.sleep(HEADER_TIMEOUT_S + 5)
        still_open = sum(not closed_by_server(sock) for sock in held)
        for sock in held:
            sock.close()
        assert still_open == 0, f"{still_open} of {HELD} half-open connections still held"  # old code: all
