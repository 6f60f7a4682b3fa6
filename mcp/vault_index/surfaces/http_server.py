"""uvicorn's connection settings for `serve --http`: a connection that never finishes its headers is closed.

Trigger: uvicorn (h11) arms its keep-alive timer only after a response, so a connection that
sends part of its headers and then nothing is held forever: 300 were still held after 30 s
(issue 22), and enough of them exhaust the process's descriptors.
Why: neither uvicorn nor h11 has a header-read timeout to set; h11 bounds the headers' size
(h11_max_incomplete_event_size), not their time.
Outcome: `HeaderTimeoutProtocol`, uvicorn's own H11Protocol with one timer: armed whenever the
connection waits for a request's headers (on connect, and when a request starts arriving after
a keep-alive pause), cancelled when the headers are complete; it closes the connection after
HEADER_TIMEOUT_S (`serve --http --header-timeout S`). `uvicorn_options()` is what serve_http passes to uvicorn.run.

The body too (issue 36): a connection that sent complete headers and then no body (or a byte now
and then) was held forever, 200 of 200 after 27 s, since the app may answer (401) without reading
the body and nothing then waits for it. Once the headers are complete and a body is due, the
connection is closed when the body pauses for the header timeout, or is not complete within
BODY_TIMEOUT_S of its headers. A pause while uvicorn itself stopped reading (the app has not taken
the bytes it has) is not the client's and does not count.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0  # a real client sends its headers in one packet; a loaded machine in well under this
# A whole body (at most 4 MiB, http_config.MAX_BODY_BYTES) within this of its headers: 4 MiB in 60 s is
# about 0.5 Mbit/s, slower than any link a remote agent uses; a pause in it is bounded by the header timeout.
BODY_TIMEOUT_S = 60.0
KEEP_ALIVE_S = 5  # uvicorn's default: an idle kept-alive connection is closed after this
MAX_HEADER_BYTES = 16 * 1024  # h11's default, named: headers past it are a 400


class HeaderTimeoutProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers take over `header_timeout_s`."""

    header_timeout_s = HEADER_TIMEOUT_S
    body_timeout_s = BODY_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _body_deadline: float | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        waiting = not self.transport.is_closing()
        if self.conn.their_state is h11.IDLE and waiting:
            self._arm()  # bytes of a request whose headers are not complete yet
        else:
            self._disarm()
        if self.conn.their_state is h11.SEND_BODY and waiting:
            self._arm_body()  # headers complete, body due: each pause and the whole body are bounded
        else:
            self._disarm_body()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._disarm_body()
        super().connection_lost(exc)

    def _arm_body(self) -> None:
        now = self.loop.time()
        if self._body_deadline is None:
            self._body_deadline = now + self.body_timeout_s
        if self._body_timer is not None:
            self._body_timer.cancel()
        self._body_timer = self.loop.call_at(min(now + self.header_timeout_s, self._body_deadline),
                                             self._body_too_slow)

    def _disarm_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
        self._body_timer = self._body_deadline = None

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        if self.flow.read_paused and self.loop.time() < (self._body_deadline or 0):
            self._arm_body()  # uvicorn stopped reading, not the client: wait on, up to the deadline
            return
        self.transport.close()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(header_timeout_s: float | None = None, body_timeout_s: float | None = None) -> dict:
    """Keyword arguments for uvicorn.run / uvicorn.Config (the connection limits above)."""
    protocol = HeaderTimeoutProtocol
    limits = {name: value for name, value in (("header_timeout_s", header_timeout_s),
                                              ("body_timeout_s", body_timeout_s)) if value is not None}
    if limits:  # uvicorn takes a class: one of our own with the timeouts
        protocol = type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), limits)
    return {"http": protocol, "timeout_keep_alive": KEEP_ALIVE_S,
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES}
