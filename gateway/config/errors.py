"""The error a configuration that cannot be used raises: a module of its own, so the command line can name it
without importing the schema (pydantic's models take a fraction of a second to build)."""


class ConfigError(Exception):
    """The configuration cannot be used; the message lists each problem with its field path."""
