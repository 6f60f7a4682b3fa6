"""`vault-index ui` (the web page, surfaces/web.py) and the text of `search --why PATH`."""

from __future__ import annotations

import sys

from vault_index.surfaces.cli_common import Progress, _say


def why_lines(why: dict) -> list[str]:
    """services/why.py's answer as the terminal prints it."""
    kind = f" ({why['kind'].replace('_', ' ')})" if why.get("kind") else ""
    lines = [f"why {why['path']}: {why['verdict'].replace('_', ' ')}{kind}: {why['reason']}"]
    for name in ("keyword", "vector"):
        side = why.get(name)
        if side:
            place = f"rank {side['rank']}, score {side['score']}" if side["rank"] else side["note"]
            lines.append(f"    {name}: {place} (cut-off {side['cutoff']})")
    return lines


def cmd_ui(app, args) -> int:
    """Serve the pages on 127.0.0.1 at a free port until Ctrl-C; print (and open) the one-time link."""
    from vault_index.surfaces.web import Background, local_asgi

    app.adopt_workspace(Progress(not args.silent))  # the project's own folders first, as `search` does
    made: dict = {}

    def asgi_for(port: int):
        made["asgi"], made["token"] = local_asgi(app, port)
        return made["asgi"]

    server = Background(asgi_for)
    url = f"http://127.0.0.1:{server.port}/ui/login?token={made['token'].value}"
    print(url, flush=True)  # data on stdout: the link; it works once, then the browser holds a cookie
    _say(args, f"vault-index ui: serving {app.workspace.describe()} on 127.0.0.1:{server.port}; Ctrl-C stops")
    if not args.no_open:
        import webbrowser

        try:
            webbrowser.open(url)
        except Exception as exc:  # noqa: BLE001 - no browser here: the printed link is enough
            print(f"could not open a browser ({exc}); open the link above", file=sys.stderr)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0


def add_parsers(sub, common) -> None:
    p = sub.add_parser("ui", parents=[common], help="a local web page: search with reasons, notes, health, review")
    p.add_argument("--no-open", action="store_true", help="print the link only; do not open a browser")
    p.add_argument("--vault", metavar="DIR", help="the vault (default: the workspace of the working folder)")
    p.set_defaults(run=cmd_ui)
