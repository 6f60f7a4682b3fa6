"""The project's exceptions: each is mapped once to a CLI exit code and once to an MCP tool error."""


class VaultIndexError(Exception):
    """Base class. The message says what went wrong and what to do next."""

    exit_code = 1


class UsageError(VaultIndexError):
    """The caller asked for something malformed (bad mode, empty query, bad limit)."""

    exit_code = 2


class AmbiguousPathError(UsageError):
    """A relative path that names different files under two folders this workspace sees; the
    message lists them (services/boundary.resolve)."""


class NotFoundError(VaultIndexError):
    """A path or source that the index does not know."""

    exit_code = 3


class OutsideSourcesError(VaultIndexError):
    """A path that resolves outside every registered source (or into secrets/)."""

    exit_code = 4


class ModelUnavailableError(VaultIndexError):
    """A model could not be loaded; search degrades to what is left."""

    exit_code = 5


class IndexBusyError(VaultIndexError):
    """Another process holds the index for writing longer than the busy timeout."""

    exit_code = 6


class IndexReadOnlyError(VaultIndexError):
    """The index can be read but not written (read-only file, folder or mount)."""

    exit_code = 7


class IndexUnavailableError(VaultIndexError):
    """The index file cannot be opened at all (permissions, or damaged where it cannot be moved)."""

    exit_code = 8


class IndexRebuiltError(VaultIndexError):
    """The index was found damaged mid-operation; it was moved aside and a fresh one created."""

    exit_code = 9


class ConfigError(VaultIndexError):
    """The vault's .vault-index/config.yaml is malformed; the message names the key path to fix."""

    exit_code = 2


class UnsafePathError(OutsideSourcesError):
    """A write target that is not a plain note inside the vault: a symlink or hardlink leading out,
    a FIFO or device, a control folder (.git, .vault-index, secrets) or a hidden folder."""


class ReadOnlyNoteError(UnsafePathError):
    """A note the person made read-only (no write permission): refused as an editor refuses it."""


class WriteBusyError(IndexBusyError):
    """Another writer held a document's lock for longer than the wait."""


class WriteFailedError(VaultIndexError, OSError):
    """The operating system refused the write (disk full, permission denied); nothing changed.

    Also an OSError, so code that guarded a file write with `except OSError` still catches it."""

    exit_code = 10
