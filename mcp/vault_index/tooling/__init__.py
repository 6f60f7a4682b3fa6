"""Tooling behind the `eval` and `bench` commands: measurement, not part of the services layer."""
