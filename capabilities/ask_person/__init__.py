"""`ask_person`: the agent asks the person it is answering a question, with options shown as buttons, and waits.

The call parks the run, as an approval does: the question is put in the chat (its options as buttons where the
platform has room, else a numbered list), and the person's click or next message there resumes the run, on any
replica, with the answer as the tool's result. Who may answer is the person whose message started the run, never
someone the model names; nobody answering before the binding's approvals expire resumes it with that said.
"""

from __future__ import annotations

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

CAPABILITY = CapabilityDef(
    id="ask_person", name="Ask the person", category="utility",
    description="Lets the agent ask the person a question, offering options as buttons, and wait for the answer.",
    tools=(ToolInfo(id="ask_person", summary="Ask the person you are answering a question and wait for their "
                                             "answer, offering options as buttons."),),
    build=Deferred("capabilities.ask_person.build:build"),
    asked=Deferred("capabilities.ask_person.build:asked"),
    lendable=False)
