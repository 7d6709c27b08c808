"""Why the gateway could not start, in words an operator acts on."""


class StartupError(Exception):
    """The gateway cannot start for a reason outside gateway.yaml (a port in use); the message names the fix."""
