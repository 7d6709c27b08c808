"""The fake Slack of the test-suite: the local workspace the product ships in ``gateway.slack_sandbox``."""

from gateway.slack_sandbox import ApiCall, HttpDelivery, SlackApp
from gateway.slack_sandbox import SlackSandbox as FakeSlack

__all__ = ["ApiCall", "FakeSlack", "HttpDelivery", "SlackApp"]
