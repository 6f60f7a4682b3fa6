"""`vault-index trust [VAULT] [--list | --revoke]`: let this machine run a vault's own hooks (or stop it).

Granting shows every hook it trusts (path, phases, size, sha256), so the person sees what they
agreed to run; a hook changed afterwards is untrusted again (services/writes/hook_trust.py, ADR 0021).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def cmd_trust(app, args) -> int:
    from vault_index.services.vault.vault import Vault
    from vault_index.services.writes import hook_trust

    vault = Vault.open(Path(args.vault or ".").expanduser())
    if args.revoke:
        removed = hook_trust.revoke(vault)
        out = {"status": "ok", "message": f"{removed} hook trust record(s) of {vault.root} removed", "hooks": []}
    elif args.list:
        states = hook_trust.declared(vault)
        out = {"status": "ok", "message": f"{len(states)} hook(s) declared by {vault.root}",
               "hooks": [s.__dict__ for s in states]}
    else:
        states = hook_trust.grant(vault)
        out = {"status": "ok", "message": f"trusted {len(states)} hook(s) of {vault.root} as they are now "
               f"(recorded in {hook_trust.trust_file()})", "hooks": [s.__dict__ for s in states]}
    if args.json:
        print(json.dumps(out))
        return 0
    print(out["message"])
    for hook in out["hooks"]:
        state = "trusted" if hook["trusted"] else f"NOT trusted ({hook['problem'] or 'new or changed content'})"
        print(f"  {hook['path']}  [{', '.join(hook['phases'])}]  {hook['size']} bytes  sha256 {hook['sha256']}"
              f"  {state}")
    return 0


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("trust", parents=[common],
                       help="let this machine run VAULT's own hooks as they are now (--revoke, --list)")
    p.add_argument("vault", nargs="?", help="the vault's folder (default: the working folder)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--revoke", action="store_true", help="stop running this vault's hooks")
    mode.add_argument("--list", action="store_true", help="show the declared hooks and whether they are trusted")
    p.set_defaults(run=cmd_trust)
