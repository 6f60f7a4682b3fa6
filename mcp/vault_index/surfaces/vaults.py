"""The vault config a server serves, re-read when its file changes: below tool_context so that the
stdio server can read its grants (for the instructions) before the tools are imported."""

from __future__ import annotations

from pathlib import Path

from vault_index.config import content_root
from vault_index.services.app import App


class _Vaults:
    """The vault config, re-read when its file changes (no restart after editing roles)."""

    def __init__(self, app: App, root: Path):
        self.app, self.root = app, root
        self._stamp: tuple | None = None
        self._vault = None

    def get(self):
        if not self.root.exists():
            content_root()  # the personal folder is made on first use, not at every server start
        config = self.root / ".vault-index" / "config.yaml"
        try:
            info = config.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        if self._vault is None or stamp != self._stamp:
            self._vault = self.app.vault(self.root)  # raises ConfigError with the key path
            self._stamp = stamp
        return self._vault
