"""The rate limit cannot be dodged by sending a fresh, made-up Authorization header each time.

The bucket is keyed by the header (so agents sharing one loopback address do not throttle each
other); a client that invents a new header per request would otherwise get a full burst per
request, which makes the limit worthless against guessing tokens or flooding the server.
"""

import asyncio

from mcp.server.transport_security import TransportSecuritySettings
from vault_index.surfaces.http_asgi import Guard
from vault_index.surfaces.http_config import HttpConfig


async def _inner(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _status(guard: Guard, auth: str) -> int:
    scope = {"type": "http", "method": "GET", "path": "/.well-known/x", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", auth.encode())],
             "client": ("127.0.0.1", 5000)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    return sent[0]["status"]


def _guard() -> Guard:
    now = [1000.0]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    config = HttpConfig(rate_per_s=0.05, burst=5)
    return Guard(_inner, config, security, clock=lambda: now[0])


def test_a_new_made_up_credential_per_request_is_still_limited():
    guard = _guard()
    answers = [_status(guard, f"Bearer guess-{i:04d}") for i in range(40)]
    assert 429 in answers, "forty invented credentials from one address all went through"


def test_one_credential_still_has_its_own_burst_and_another_is_not_throttled_by_it():
    guard = _guard()
    answers = [_status(guard, "Bearer one") for _ in range(7)]
    assert answers[:5] == [200] * 5 and answers[5:] == [429, 429]
    assert _status(guard, "Bearer two") == 200
