"""The fake Mattermost of the test-suite: the server sandbox the product ships in `gateway/`."""

from gateway.sandbox.mattermost import ApiCall, OutgoingWebhook
from gateway.sandbox.mattermost import MattermostSandbox as FakeMattermost

__all__ = ["ApiCall", "FakeMattermost", "OutgoingWebhook"]
