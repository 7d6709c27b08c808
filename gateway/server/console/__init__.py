"""The operator console in the browser: sign-in, the overview, runs, approvals, agents and their builder, knowledge.

Server-rendered (Jinja2 templates, htmx for the parts that refresh themselves), served by the gateway under
`console.path` when `console.enabled`; every page and form answers only within a signed-in session.
"""
