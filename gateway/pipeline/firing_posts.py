"""A firing whose text is posted as written (a reminder's message, a schedule's `text`): no model run, one post.

The post goes through the live reply, as an answer does, so it keeps an answer's promise across crashes: the
message is recorded on the inbox item as soon as it is posted, and a retry edits it instead of posting again. Where
the platform cannot say whether a post being sent arrived (a Telegram private chat), the retry posts it again and
says why: a reminder lost in silence is worse than one shown twice.
"""

from __future__ import annotations

from functools import partial

from sqlalchemy import Connection

from adapters.platforms import PlatformAdapter
from gateway.pipeline.conversations import record_post
from gateway.pipeline.firings import Firing
from gateway.pipeline.inbox import Inbox, InboxItem
from gateway.pipeline.intake import TypingShown
from gateway.pipeline.live_reply import SENT_FROM_DRAFTS, LiveReply, Placeholder
from gateway.pipeline.notices import FIRING_SENT_AGAIN
from gateway.pipeline.worker import Finish


async def post_firing(adapter: PlatformAdapter, item: InboxItem, firing: Firing, *, inbox: Inbox,
                      typing: TypingShown, agent_name: str) -> Finish:
    """Post the firing's text; its end (the words in the conversation's history) is committed with the item."""
    # An earlier attempt that died sending it cannot tell whether it arrived (Telegram): a reminder lost in silence
    # is worse than one shown twice, so it is posted again, saying why.
    cut_off = item.reply_message_id == SENT_FROM_DRAFTS
    text = f"{FIRING_SENT_AGAIN}\n\n{firing.text}" if cut_off else firing.text
    placeholder = None if cut_off else Placeholder(
        recorded_id=item.reply_message_id, key=item.logical_id, record=partial(inbox.remember_reply, item.id),
        answering=None, retried=item.attempts > 1)
    reply = LiveReply(adapter, firing.address, placeholder=placeholder,
                      posting=partial(typing.cleared, firing.address.conversation_key))
    refs = await reply.finish(text)

    def finish(connection: Connection) -> None:
        record_post(connection, firing.address, text=firing.text, speaker_name=agent_name,
                    platform_message_id=refs[0].message_id if refs else None)
    return finish
