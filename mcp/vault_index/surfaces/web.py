"""The web page for people: server-rendered pages over the App, behind a session cookie.

Two ways in, one set of pages (surfaces/web_pages.py builds what each page shows):
- `vault-index ui`: a one-time token in the URL it prints is exchanged for a session cookie; the
  person is the local person of the terminal in that folder (surfaces/callers.py);
- `serve --http`: the same pages under /ui, entered with the bearer token (or an OAuth access
  token) in a login form, acting with that token's role.
The cookie is HttpOnly and SameSite=Strict; every POST carries the session's CSRF token and a
foreign Origin (or Sec-Fetch-Site: cross-site) is refused; every answer carries a strict
Content-Security-Policy (no script at all, nothing from outside the package) and no-store.
Jinja2 is imported here only, when a page server is built: never before an MCP handshake.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

COOKIE = "vault_ui"
SESSION_TTL_S = 12 * 3600  # a session lasts a working day; the token exchange makes a new one
MAX_SESSIONS = 1000
UI = "/ui"
HERE = Path(__file__).parent
CSP = ("default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
# Trigger: with no-referrer Chromium sent `Origin: null` on our own form posts, which same_site refuses.
# Outcome: same-origin: our pages get their origin, other sites get no referrer (nor the login link).
HEADERS = {"content-security-policy": CSP, "x-frame-options": "DENY", "referrer-policy": "same-origin",
           "cache-control": "no-store", "x-content-type-options": "nosniff"}


@dataclass(frozen=True)
class Principal:
    """Who uses the page: the write service's Caller, their read Scope, the vault and its grants."""

    caller: object  # services.writes.write_types.Caller
    scope: object  # services.access.access.Scope
    vault: object  # services.vault.vault.Vault

    def may(self, action: str, path: str) -> bool:
        """Whether the role may `action` (write, promote) the vault note at `path` (absolute)."""
        collection = self.scope.collection(path)
        grants = self.vault.grants(self.caller.role)
        return collection is not None and grants.can(action, collection)


@dataclass
class Session:
    principal: Principal
    csrf: str
    expires: float


@dataclass
class Sessions:
    """Sessions in memory: a restart signs everyone out, which is what a local tool should do."""

    items: dict[str, Session] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    clock: Callable[[], float] = time.monotonic

    def new(self, principal: Principal) -> str:
        sid = secrets.token_urlsafe(32)
        with self.lock:
            now = self.clock()
            self.items = {k: s for k, s in self.items.items() if s.expires > now}
            if len(self.items) >= MAX_SESSIONS:  # the oldest goes
                self.items.pop(min(self.items, key=lambda k: self.items[k].expires))
            self.items[sid] = Session(principal, secrets.token_urlsafe(32), now + SESSION_TTL_S)
        return sid

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self.lock:
            found = self.items.get(sid)
            if found is None or found.expires <= self.clock():
                self.items.pop(sid, None)
                return None
            return found


class OneTimeToken:
    """The token `vault-index ui` prints: good for one exchange, compared in constant time."""

    def __init__(self, principal: Callable[[], Principal]):
        self.value, self.principal, self.used = secrets.token_urlsafe(32), principal, False
        self.lock = threading.Lock()

    async def __call__(self, token: str) -> Principal | None:
        with self.lock:
            if self.used or not hmac.compare_digest(token.encode(), self.value.encode()):
                return None
            self.used = True
        return self.principal()


Authenticate = Callable[[str], Awaitable["Principal | None"]]


def local_principal(app) -> Principal:
    """The person at this machine over the vault the terminal in this folder uses (callers.local_read_scope)."""
    from dataclasses import replace

    from vault_index.config import content_root
    from vault_index.services.access.access import scope_for
    from vault_index.surfaces.callers import cli_caller

    root = app.workspace.root if app.workspace.kind == "vault" else content_root()
    vault = app.vault(root)
    caller = replace(cli_caller(vault), agent="web page")
    return Principal(caller, scope_for(vault, vault.grants(caller.role)), vault)


def build_routes(app, authenticate: Authenticate, *, sessions: Sessions | None = None, secure: bool = False,
                 hosts: frozenset[str] | None = None, token_in_link: bool = True) -> list:
    """The page routes under /ui. `authenticate(token)` turns a login token into a Principal (None:
    refused); `hosts`: the Host values allowed (the local server's; None where a Guard checks them);
    `token_in_link` False: a token only in the sign-in form's body (a long-lived bearer token must not
    sit in a URL, a history or a log; the one-time link's token dies on first use)."""
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    from vault_index.surfaces import web_pages

    sessions = sessions or Sessions()
    pages = web_pages.Pages(app)

    def answer(body: str, status: int = 200, **extra) -> Response:
        return HTMLResponse(body, status_code=status, headers={**HEADERS, **extra})

    def refused(request, status: int, message: str) -> Response:
        return answer(pages.render("message.html", title="Not allowed", message=message, session=None), status)

    def host_ok(request) -> bool:
        return hosts is None or request.headers.get("host", "") in hosts

    def same_site(request) -> bool:
        """A POST from our own pages: no foreign Origin, not a cross-site fetch."""
        origin = request.headers.get("origin")
        if origin is not None and (origin == "null" or urlsplit(origin).netloc != request.headers.get("host")):
            return False
        return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    def page(name: str, method: str = "GET"):
        """A route that needs a session (and, for a POST, the CSRF token and our own origin)."""

        def wrap(fn):
            async def endpoint(request):
                if not host_ok(request):
                    return refused(request, 421, "this page answers on 127.0.0.1 and localhost only")
                session = sessions.get(request.cookies.get(COOKIE))
                if session is None:
                    return answer(pages.render("login.html", title="Sign in", session=None, problem=""), 401)
                if method == "POST":
                    form = await request.form()
                    token = str(form.get("csrf", ""))
                    if not same_site(request) or not hmac.compare_digest(token.encode(), session.csrf.encode()):
                        return refused(request, 403, "refused: this form did not come from this page "
                                                     "(missing or wrong CSRF token, or another site's origin)")
                    done = await pages.run(fn, session, dict(form))
                    return RedirectResponse(f"{UI}/{done[0]}?{urlencode(done[1])}", status_code=303,
                                            headers=HEADERS)
                template, data, status = await pages.run(fn, session, dict(request.query_params))
                return answer(pages.render(template, session=session, **data), status)

            return Route(f"{UI}/{name}", endpoint, methods=[method])

        return wrap

    async def login(request):
        if not host_ok(request):
            return refused(request, 421, "this page answers on 127.0.0.1 and localhost only")
        if request.method == "POST":
            if not same_site(request):
                return refused(request, 403, "refused: the sign-in form came from another site")
            token = str((await request.form()).get("token", ""))
        else:
            token = request.query_params.get("token", "") if token_in_link else ""
        principal = await authenticate(token) if token else None
        if principal is None:
            problem = "that token is wrong, or was used already" if token else ""
            return answer(pages.render("login.html", title="Sign in", session=None, problem=problem),
                          403 if token else 200)
        response = RedirectResponse(f"{UI}/search", status_code=303, headers=HEADERS)
        response.set_cookie(COOKIE, sessions.new(principal), max_age=SESSION_TTL_S, path="/", httponly=True,
                            samesite="strict", secure=secure)
        return response

    async def css(request):
        return Response((HERE / "web_static" / "ui.css").read_bytes(), media_type="text/css",
                        headers={**HEADERS, "cache-control": "max-age=3600"})

    async def home(request):
        return RedirectResponse(f"{UI}/search", status_code=303, headers=HEADERS)

    routes = [Route(f"{UI}/login", login, methods=["GET", "POST"]), Route(f"{UI}/ui.css", css, methods=["GET"]),
              Route(UI, home, methods=["GET"]), Route(f"{UI}/", home, methods=["GET"])]
    routes += [page("search")(pages.search), page("note")(pages.note), page("health")(pages.health),
               page("review")(pages.review), page("revert", "POST")(pages.revert),
               page("promote", "POST")(pages.promote)]
    return routes


def local_asgi(app, port: int):
    """The Starlette app of `vault-index ui`: / goes to the pages; (the app, its one-time token)."""
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    token = OneTimeToken(lambda: local_principal(app))
    hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})

    async def root(request):
        return RedirectResponse(f"{UI}/search", status_code=303, headers=HEADERS)

    routes = [Route("/", root, methods=["GET"]), *build_routes(app, token, hosts=hosts)]
    return Starlette(routes=routes), token


class Background:
    """A uvicorn server on a thread, on a socket bound here (127.0.0.1, a free port): the `ui`
    command runs it in the foreground; the browser tests and the bench start it this way."""

    def __init__(self, asgi_for_port: Callable[[int], object], host: str = "127.0.0.1"):
        import socket

        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Trigger: every page after the first on a kept-alive connection took 43 ms (Nagle against the
        # client's delayed ACK: uvicorn given a socket does not set TCP_NODELAY, its own bind does).
        # Outcome: set on the listener, which Linux's accepted sockets inherit: 0.3 ms for a tiny page.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket.bind((host, 0))
        # listening from here on: a browser opened on the printed link before uvicorn starts waits in
        # the backlog instead of being refused (the CLI test hit that under load)
        self.socket.listen(128)
        self.port = self.socket.getsockname()[1]
        self.asgi = asgi_for_port(self.port)
        self.server = self.thread = None

    def _server(self):
        import uvicorn

        config = uvicorn.Config(self.asgi, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        return self.server

    def run(self) -> None:
        self._server().run(sockets=[self.socket])

    def start(self) -> Background:
        server = self._server()
        self.thread = threading.Thread(target=server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        while not server.started and self.thread.is_alive():
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(10)
        self.socket.close()
