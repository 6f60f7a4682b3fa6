"""The web page under `serve --http` (a real server process): behind the bearer token, acting with its
role, with the Host/Origin guard in front; a reader sees only its collections and no promote."""

from __future__ import annotations

import httpx
from helpers import write
from remote_harness import NOTE, make_vault, new_token, spawn


def test_serve_http_serves_the_pages_behind_its_tokens(tmp_path):
    root, env = make_vault(tmp_path)
    reader, owner = new_token(env, "reader")["token"], new_token(env, "owner")["token"]
    write(root, "notes/draft.md", NOTE.format(title="Draft", words="a draft about brake cables"))
    with spawn(env) as base:
        anonymous = httpx.Client(base_url=base, timeout=30)
        for page in ("search?q=brake", "health", "review", "note?path=notes/bikes.md"):
            assert anonymous.get(f"/ui/{page}").status_code == 401
        refused = anonymous.post("/ui/login", data={"token": "not-a-token"}, follow_redirects=False)
        assert refused.status_code == 403 and "vault_ui" not in refused.cookies
        foreign = anonymous.post("/ui/login", data={"token": reader}, headers={"origin": "https://evil.example"})
        assert foreign.status_code in (400, 403) and "vault_ui" not in foreign.cookies

        in_link = anonymous.get("/ui/login", params={"token": owner}, follow_redirects=False)
        assert in_link.status_code == 200 and "vault_ui" not in in_link.cookies  # a bearer token never in a URL
        people = {}
        for name, token in (("reader", reader), ("owner", owner)):
            client = httpx.Client(base_url=base, timeout=30)
            signed = client.post("/ui/login", data={"token": token}, follow_redirects=False)
            assert signed.status_code == 303, signed.text
            people[name] = client
        found = people["reader"].get("/ui/search", params={"q": "brake"}).text.split("</form>")[-1]
        assert "notes/bikes.md" in found and "diary" not in found  # private/ is not the reader's
        hidden = people["reader"].get("/ui/note", params={"path": "private/diary.md"})
        missing = people["reader"].get("/ui/note", params={"path": "private/nothing.md"})
        assert hidden.status_code == missing.status_code == 404
        assert hidden.text.replace("diary", "nothing") == missing.text
        assert "/ui/promote" not in people["reader"].get("/ui/review").text
        assert "/ui/promote" in people["owner"].get("/ui/review").text  # owner may promote the drafts
        assert "diary" in people["owner"].get("/ui/search", params={"q": "brake secret"}).text
