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
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0  # a real client sends its headers in one packet; a loaded machine in well under this
KEEP_ALIVE_S = 5  # uvicorn's default: an idle kept-alive connection is closed after this
MAX_HEADER_BYTES = 16 * 1024  # h11's default, named: headers past it are a 400


class HeaderTimeoutProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers take over `header_timeout_s`."""

    header_timeout_s = HEADER_TIMEOUT_S
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # bytes of a request whose headers are not complete yet
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

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


def uvicorn_options(header_timeout_s: float | None = None) -> dict:
    """Keyword arguments for uvicorn.run / uvicorn.Config (the connection limits above)."""
    protocol = HeaderTimeoutProtocol
    if header_timeout_s is not None:  # uvicorn takes a class: one of our own with the timeout
        protocol = type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": header_timeout_s})
    return {"http": protocol, "timeout_keep_alive": KEEP_ALIVE_S,
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES}
