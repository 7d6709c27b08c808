"""The `gateway` command: check, apply, serve, demo and the operator tools."""
