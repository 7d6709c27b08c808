"""The paths no workspace tool may read, write or edit, whatever the approval policy says.

Credentials and the operating system's tree are refused with a readable line the model can act on
(`Error: Permission denied: ...`); `grep` drops matches inside them rather than refusing, because a
pattern over the whole workspace is legitimate; `ls` and `glob` still show names, which are not secret.
A command naming one of these paths is refused too. That last part is defence in depth and not a
boundary: a shell reaches a file in ways a string check cannot see (`cat /e''tc/shadow`), which is why
the shell backends isolate the process as well (`capabilities/sandbox/shell.py`).

The ruleset allows every operation otherwise, `execute` included: the approval gate (`execute` is the
capability's one side-effecting tool) is the gateway's, and a library gate as well would park twice.
"""

from __future__ import annotations

from pydantic_ai_backends.permissions import (
    SECRETS_PATTERNS,
    SYSTEM_PATTERNS,
    OperationPermissions,
    PermissionRule,
    PermissionRuleset,
)

CREDENTIALS = "credentials are never read or written in a workspace"
SYSTEM = "the operating system's files are outside the workspace"
SYSTEM_TREE = (*SYSTEM_PATTERNS, "/dev/**", "/run/**", "/lib/**", "/lib64/**", "/opt/**", "/srv/**", "/root/**",
               "/home/**")
"""The catalog's `/etc/**`, `/usr/**`, `/proc/**` and their siblings."""


def refusals(working_dir: str | None = None) -> PermissionRuleset:
    """The ruleset for a workspace whose files live under `working_dir` (None: a stored workspace, rooted at `/`).

    First match wins: credentials are refused everywhere, the working directory is allowed even when it lies
    inside the system tree (a host directory under `/var/lib`), and the system tree is refused."""
    rules = [PermissionRule(pattern=pattern, action="deny", description=CREDENTIALS) for pattern in SECRETS_PATTERNS]
    if working_dir is not None and working_dir != "/":
        rules += [PermissionRule(pattern=working_dir.rstrip("/"), action="allow"),
                  PermissionRule(pattern=working_dir.rstrip("/") + "/**", action="allow")]
    rules += [PermissionRule(pattern=pattern, action="deny", description=SYSTEM) for pattern in SYSTEM_TREE]
    guarded = OperationPermissions(default="allow", rules=rules)
    listed = OperationPermissions(default="allow")
    return PermissionRuleset(default="allow", read=guarded, write=guarded, edit=guarded, grep=guarded,
                             execute=OperationPermissions(default="allow"), ls=listed, glob=listed)
