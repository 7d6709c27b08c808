"""The fake Mattermost of the test-suite: the local server the product ships in ``local_platforms.mattermost``."""

from local_platforms.mattermost import ApiCall, OutgoingWebhook
from local_platforms.mattermost import LocalMattermost as FakeMattermost

__all__ = ["ApiCall", "FakeMattermost", "OutgoingWebhook"]
