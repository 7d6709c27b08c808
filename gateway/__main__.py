"""`python -m gateway` runs the same command line as `gateway`."""

from gateway.cli.main import app

app()
