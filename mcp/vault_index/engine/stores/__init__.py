"""The index stores (SQLite, PostgreSQL), the contract they share, recovery and migration."""
