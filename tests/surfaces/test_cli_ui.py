"""`vault-index ui` as a person starts it (a real process) and `search --why PATH` at the terminal."""

from __future__ import annotations

import json
import subprocess

import httpx
from helpers import CLI, cli_env, write


def _vault(tmp_path):
    root = tmp_path / "notes"
    write(root, "bike.md", "# Bike\n\n## Brakes\n\nReplace the brake pads when the groove wears away.\n")
    write(root, "kiln.md", "# Kiln\n\nFire the kiln at dawn.\n")
    write(root, "secrets/keys.md", "# Keys\n\nbrake key\n")
    env = cli_env(tmp_path / "index.db", HOME=str(tmp_path / "home"), VAULT_INDEX_HOME=str(tmp_path / "home/.mm"))
    done = subprocess.run([CLI, "index", str(root), "-s"], env=env, cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return root, env


def test_search_why_says_where_a_note_stands(tmp_path):
    root, env = _vault(tmp_path)
    run = lambda *a: subprocess.run([CLI, "search", "brake pads", "--mode", "keyword", *a], env=env, cwd=root,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    done = run("--why", "kiln.md")
    assert done.returncode == 0, done.stderr
    assert "why " in done.stdout and "outranked" in done.stdout and "no query word in it" in done.stdout
    data = json.loads(run("--why", "secrets/keys.md", "--json").stdout)
    assert data["why"]["verdict"] == "not_indexed" and data["why"]["kind"] == "secret"
    assert json.loads(run("--why", "bike.md", "--json").stdout)["why"]["verdict"] == "ranked"


def test_ui_prints_a_one_time_link_on_loopback(tmp_path):
    root, env = _vault(tmp_path)
    process = subprocess.Popen([CLI, "ui", "--no-open", "-s"], env=env, cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/ui/login?token=" in url
        base = url.split("/ui/")[0]
        assert httpx.get(f"{base}/ui/search", timeout=30).status_code == 401  # no page without the token
        person = httpx.Client(timeout=30)
        page = person.get(url, follow_redirects=True)  # the token becomes the session cookie
        assert page.status_code == 200 and "Search" in page.text
        cookie = person.cookies.jar and next(iter(person.cookies.jar))
        assert cookie.has_nonstandard_attr("HttpOnly") and cookie.get_nonstandard_attr("SameSite") == "strict"
        found = person.get(f"{base}/ui/search", params={"q": "brake pads"})
        assert str(root / "bike.md") in found.text and "keyword rank" in found.text
        assert httpx.get(url, timeout=30).status_code == 403  # the link works once
        assert httpx.get(url.replace("127.0.0.1", "localhost"), timeout=30).status_code == 403
        rebinding = httpx.get(f"{base}/ui/search", headers={"host": "evil.example"}, cookies=person.cookies)
        assert rebinding.status_code == 421  # a foreign Host name (DNS rebinding) gets nothing
    finally:
        process.terminate()
        process.wait(timeout=20)
