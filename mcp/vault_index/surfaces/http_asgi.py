"""The ASGI layers in front of the SDK's /mcp handler: era routing, Host/Origin, size and rate limits.

`EraRouter` decides each request's protocol era from its body (the SDK reads only the
MCP-Protocol-Version header) and answers a pinned server's other era with the fallback signal.
`Guard` is the outermost layer of the whole app (docs/adr/0011-remote-access.md says why each
exists and what the SDK already does).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Literal

Era = Literal["auto", "legacy", "modern"]
MCP_PATH = "/mcp"
MAX_FORM_BYTES = 16 * 1024  # the consent form and the OAuth endpoints
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})
MODERN_MIN_VERSION = "2026-"  # protocol revisions are dates; every 2026+ revision is handshake-free
UNSUPPORTED_PROTOCOL_VERSION = -32022


# --- era routing ----------------------------------------------------------------------------------


def request_era(body: object) -> str | None:
    """"modern", "legacy" or None (not JSON-RPC: the SDK answers it) from the request itself.

    Modern: a 2026+ protocol version declared in the request's `_meta`, or a method only the
    handshake-free era has. Never the MCP-Protocol-Version or Mcp-Method header alone: a dual-era
    client sends them with a legacy initialize too.
    """
    from mcp_types import PROTOCOL_VERSION_META_KEY

    if isinstance(body, list):  # JSON-RPC batches exist only in the handshake era (2025-03-26)
        return "legacy"
    if not isinstance(body, dict) or not isinstance(body.get("method"), str) and "result" not in body \
            and "error" not in body:
        return None
    if body.get("method") in MODERN_ONLY_METHODS:
        return "modern"
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    if isinstance(version, str) and version >= MODERN_MIN_VERSION:
        return "modern"
    return "legacy"


class EraRouter:
    """ASGI wrapper of the SDK's /mcp handler: reads the body once, decides the era, replays it."""

    def __init__(self, inner, era: Era, max_body: int):
        self.inner, self.era, self.max_body = inner, era, max_body

    async def __call__(self, scope, receive, send):
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

        if scope["method"] != "POST":
            # GET (the server-to-client stream) and DELETE (end a session) exist only with sessions
            if self.era == "modern":
                return await _plain(send, 405, "this server is pinned to the 2026-07-28 era: POST only")
            return await self.inner(scope, receive, send)
        body = await _read_body(receive, self.max_body)
        if body is None:
            return await _plain(send, 413, "request body too large")
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        except RecursionError:  # nested past json's depth: the SDK would parse it again and fail with a 500
            return await _json(send, 400, {"jsonrpc": "2.0", "id": None,
                                           "error": {"code": -32700, "message": "Parse error: nested too deeply"}})
        era = request_era(message)
        header = _header(scope, b"mcp-protocol-version")
        if era == "modern" and self.era == "legacy":
            return await _unsupported(send, message, list(HANDSHAKE_PROTOCOL_VERSIONS))
        if era == "legacy" and self.era == "modern":
            return await _unsupported(send, message, list(MODERN_PROTOCOL_VERSIONS))
        if era == "modern" and header not in MODERN_PROTOCOL_VERSIONS:
            # The SDK would take this modern body down its handshake path (it reads the header
            # only); the modern entry's own check answers it instead: header and body disagree.
            return await _modern_rejection(send, message, scope)
        if era == "legacy" and header is not None and header not in HANDSHAKE_PROTOCOL_VERSIONS:
            # Trigger: a handshake-era request whose MCP-Protocol-Version header names another era.
            # Why: the SDK routes on that header alone and would send it to the modern entry.
            # Outcome: the header goes; the body's era decides (the session carries the version).
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version"]}
        await self.inner(scope, _replay(body, receive), send)


async def _read_body(receive, limit: int) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """The body read once, then the real channel: a streamed answer watches it for the disconnect."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _header(scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


async def _unsupported(send, message, supported: list[str]) -> None:
    """The fallback signal: -32022 with the versions this server speaks (a modern client falls back
    to initialize when they are handshake versions; a legacy client learns it must upgrade)."""
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    requested = (meta or {}).get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    if requested is None and isinstance(params, dict):
        requested = params.get("protocolVersion")
    request_id = message.get("id") if isinstance(message, dict) else None
    error = {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
             "data": {"supported": supported, "requested": str(requested or "")}}
    await _json(send, ERROR_CODE_HTTP_STATUS.get(UNSUPPORTED_PROTOCOL_VERSION, 400),
                {"jsonrpc": "2.0", "id": request_id, "error": error})


async def _modern_rejection(send, message, scope) -> None:
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, classify_inbound_request

    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    verdict = classify_inbound_request(message, headers=headers)
    code = getattr(verdict, "code", -32600)
    error = {"code": code, "message": getattr(verdict, "message", "invalid request")}
    if getattr(verdict, "data", None) is not None:
        error["data"] = verdict.data
    await _json(send, ERROR_CODE_HTTP_STATUS.get(code, 400),
                {"jsonrpc": "2.0", "id": message.get("id"), "error": error})


async def _json(send, status: int, data: dict) -> None:
    payload = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


async def _plain(send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = text.encode()
    length = (b"content-length", str(len(data)).encode())
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), length, *headers]})
    await send({"type": "http.response.body", "body": data})


# --- limits and host checks for every route -----------------------------------------------------


class Guard:
    """Outermost ASGI layer: Host/Origin (every route, not only /mcp), body size, rate per credential.

    The rate limit is a token bucket keyed by a hash of the Authorization header (else the client
    address): on loopback or behind a proxy every client shares one address, so the address alone
    would make one busy agent throttle the others.
    """

    def __init__(self, inner, config, security, clock=time.monotonic):
        """`config`: an HttpConfig (limits); `security`: its TransportSecuritySettings."""
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.inner, self.config, self.clock = inner, config, clock
        self.checker = TransportSecurityMiddleware(security)
        self.buckets: dict[str, tuple[float, float]] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        from starlette.requests import Request

        refused = await self.checker.validate_request(Request(scope), is_post=False)
        if refused is not None:
            return await refused(scope, receive, send)
        declared = _header(scope, b"content-length")
        limit = self.config.max_body if scope["path"] == MCP_PATH else MAX_FORM_BYTES
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _plain(send, 413, "request body too large")
        key = _rate_key(scope)
        # Trigger: a credential this guard has no bucket for. Why: the bucket is keyed by the
        # Authorization header, so inventing a header per request would get a fresh burst each
        # time. Outcome: new credentials are also charged to their client address's bucket.
        wait = self._take(_address_key(scope, "n:")) if key not in self.buckets and key.startswith("a:") else 0.0
        if wait <= 0:
            wait = self._take(key)
        if wait > 0:
            return await _plain(send, 429, "too many requests; slow down",
                                [(b"retry-after", str(max(1, round(wait))).encode())])
        if scope["path"] == MCP_PATH:  # EraRouter reads the whole body under the same limit, answers 413 itself
            return await self.inner(scope, receive, send)
        # Trigger: a chunked body past the limit ended as a disconnect, and one nested past json's
        # depth raised inside the SDK's handlers: both were 500s (issue 22). Outcome: the small
        # bodies of the OAuth and consent routes are read here first: 413 past the limit, 400 for
        # JSON nested too deeply, then replayed to the route.
        body = await _read_body(receive, limit)
        if body is None:
            return await _plain(send, 413, "request body too large")
        if body.lstrip()[:1] in (b"{", b"[") and _too_deep(body):
            return await _json(send, 400, {"error": "invalid_request", "error_description": "JSON nested too deeply"})
        await self.inner(scope, _replay(body, receive), send)

    def _take(self, key: str) -> float:
        """0 when the request may go, else the seconds until the bucket holds a token again."""
        if self.config.rate_per_s <= 0:
            return 0.0
        now = self.clock()
        tokens, last = self.buckets.get(key, (float(self.config.burst), now))
        tokens = min(float(self.config.burst), tokens + (now - last) * self.config.rate_per_s)
        if tokens < 1:
            self.buckets[key] = (tokens, now)
            return (1 - tokens) / self.config.rate_per_s
        self.buckets[key] = (tokens - 1, now)
        if len(self.buckets) > 10_000:  # forget idle clients
            self.buckets = {k: v for k, v in self.buckets.items() if now - v[1] < 60}
        return 0.0


def _rate_key(scope) -> str:
    auth = _header(scope, b"authorization")
    if auth:
        return "a:" + hashlib.sha256(auth.encode()).hexdigest()[:32]
    return _address_key(scope, "c:")


def _address_key(scope, prefix: str) -> str:
    client = scope.get("client") or ("?", 0)
    return f"{prefix}{client[0]}"


def _too_deep(body: bytes) -> bool:
    """Whether a JSON body nests past what json (and so the SDK's handlers) can parse."""
    try:
        json.loads(body)
    except RecursionError:
        return True
    except ValueError:  # not JSON: the route answers that in its own words
        return False
    return False
