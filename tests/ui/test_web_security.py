"""The page's security rules over plain HTTP (Starlette's test client): no page or action without a
session, no cross-site POST, no hidden note in any page or count, no revert or promote for a reader."""

from __future__ import annotations

import re

import pytest
from conftest import HIDDEN_WORD
from starlette.applications import Starlette
from starlette.testclient import TestClient
from vault_index.surfaces.web import COOKIE, CSP, Sessions, build_routes

PAGES = ("search?q=pump", "note?path=alpha/valve.md", "health", "review")


@pytest.fixture
def sessions():
    return Sessions()


@pytest.fixture
def client(site, authenticate, sessions):
    asgi = Starlette(routes=build_routes(site[0], authenticate, sessions=sessions))
    return lambda: TestClient(asgi, base_url="http://127.0.0.1:8000")


def signed_in(client, token: str) -> TestClient:
    c = client()
    answer = c.post("/ui/login", data={"token": token}, follow_redirects=False)
    assert answer.status_code == 303 and COOKIE in answer.cookies
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    return c


def csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page)[1]


@pytest.mark.parametrize("page", PAGES)
def test_no_page_without_a_session(client, page):
    c = client()
    answer = c.get(f"/ui/{page}")
    assert answer.status_code == 401 and "Sign in" in answer.text and "pump" not in answer.text.split("<main")[1]
    c.cookies.set(COOKIE, "forged")
    assert c.get(f"/ui/{page}").status_code == 401


def test_no_action_without_a_session(client, site):
    before = (site[1] / "alpha/pump.md").read_text()
    for action in ("revert", "promote"):
        assert client().post(f"/ui/{action}", data={"path": "alpha/pump.md", "commit": "HEAD"}).status_code == 401
    assert (site[1] / "alpha/pump.md").read_text() == before


def test_a_wrong_token_gets_no_session(client):
    answer = client().post("/ui/login", data={"token": "guess"}, follow_redirects=False)
    assert answer.status_code == 403 and COOKIE not in answer.cookies


@pytest.mark.parametrize("page", PAGES)
def test_every_page_carries_the_strict_policy(client, page):
    answer = signed_in(client, "admin-token").get(f"/ui/{page}")
    assert answer.status_code == 200
    assert answer.headers["content-security-policy"] == CSP and "default-src 'self'" in CSP
    assert "<script" not in answer.text and "http://" not in answer.text.replace("http://127.0.0.1", "")


def test_a_cross_site_post_is_refused(client, site):
    c = signed_in(client, "admin-token")
    review = c.get("/ui/review").text
    commit = re.search(r'name="commit" value="([0-9a-f]+)"', review)[1]
    form = {"path": "alpha/pump.md", "commit": commit}
    before = (site[1] / "alpha/pump.md").read_text()
    assert c.post("/ui/revert", data=form).status_code == 403  # no CSRF token
    assert c.post("/ui/revert", data={**form, "csrf": "wrong"}).status_code == 403
    token = csrf(review)
    for foreign in ({"origin": "https://evil.example"}, {"origin": "null"}, {"sec-fetch-site": "cross-site"}):
        assert c.post("/ui/revert", data={**form, "csrf": token}, headers=foreign).status_code == 403
    assert (site[1] / "alpha/pump.md").read_text() == before
    done = c.post("/ui/revert", data={**form, "csrf": token}, headers={"origin": "http://127.0.0.1:8000"})
    assert done.status_code == 200 and "written" in done.text  # the same form from our page lands


def test_a_hidden_project_or_collection_never_appears(client, site):
    app, root, hidden_note, _ = site
    c = signed_in(client, "reader-token")
    pages = [c.get(f"/ui/search?q={HIDDEN_WORD}+pump"), c.get("/ui/health"), c.get("/ui/review")]
    for answer in pages:  # what the page shows, after the form that echoes what was typed
        shown = answer.text.split("</form>")[-1]
        assert HIDDEN_WORD not in shown and "budget" not in shown and "other-project" not in shown
    for path in (hidden_note, root / "beta/budget.md"):  # the inspector: hidden answers as missing
        missing = path.with_name("nothing.md")
        hidden_why = c.get("/ui/search", params={"q": "pump", "why": str(path)}).text.split("</form>")[1]
        missing_why = c.get("/ui/search", params={"q": "pump", "why": str(missing)}).text.split("</form>")[1]
        assert "not found" in hidden_why and hidden_why.replace(path.name, "nothing.md") == missing_why
    health = c.get("/ui/health").text
    assert "3 notes you may read" in health  # alpha's three; beta's and the other project's are not counted
    for path in (str(hidden_note), "beta/budget.md", str(root / "beta/budget.md")):
        missing = c.get("/ui/note", params={"path": path.replace("budget", "nothing")})
        hidden = c.get("/ui/note", params={"path": path})
        assert hidden.status_code == missing.status_code == 404
        assert hidden.text.replace("budget", "nothing") == missing.text  # one answer for hidden and missing
    admin = signed_in(client, "admin-token")
    assert "beta/budget.md" in admin.get("/ui/search?q=quokkasecretword").text  # admin reads beta
    assert "other-project" not in admin.get("/ui/search?q=quokkasecretword").text  # never another project


def test_a_reader_sees_no_revert_or_promote(client, site, sessions):
    reader, admin = signed_in(client, "reader-token"), signed_in(client, "admin-token")
    assert "/ui/revert" in admin.get("/ui/review").text and "/ui/promote" in admin.get("/ui/review").text
    page = reader.get("/ui/review").text
    assert "alpha/pump.md" in page  # the write is listed, with its diff
    assert "/ui/revert" not in page and "/ui/promote" not in page
    commit = re.search(r"[0-9a-f]{40}", admin.get("/ui/review").text)[0]
    before = (site[1] / "alpha/pump.md").read_text()
    refused = reader.post("/ui/revert", data={"path": "alpha/pump.md", "commit": commit,
                                           "csrf": sessions.get(reader.cookies.get(COOKIE)).csrf})
    assert "denied" in refused.text and (site[1] / "alpha/pump.md").read_text() == before  # the service refuses too
