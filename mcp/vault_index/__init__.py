"""vault-index: hybrid keyword + vector search over a folder of markdown notes."""

__version__ = "0.1.0"
