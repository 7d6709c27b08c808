"""The fake Slack of the test-suite: the local workspace the product ships in ``gateway.sandbox.slack``."""

from gateway.sandbox.slack import ApiCall, HttpDelivery, SlackApp
from gateway.sandbox.slack import SlackSandbox as FakeSlack

__all__ = ["ApiCall", "FakeSlack", "HttpDelivery", "SlackApp"]
