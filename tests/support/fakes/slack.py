"""The fake Slack of the test-suite: the local workspace the product ships in ``local_platforms.slack``."""

from local_platforms.slack import ApiCall, HttpDelivery, SlackApp
from local_platforms.slack import LocalSlack as FakeSlack

__all__ = ["ApiCall", "FakeSlack", "HttpDelivery", "SlackApp"]
