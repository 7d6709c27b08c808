"""What a bubblewrap workspace's command sees: its own directory at `/workspace`, and the host's system files.

The sandbox's root is an empty tmpfs, remounted read-only once it is built. Into it go, read-only, `/usr`
(and `/bin`, `/sbin`, `/lib*` as they are on the host: symlinks into `/usr` on merged-usr systems), and a
short list of `/etc` entries that programs need to start (the loader cache, `alternatives`, time zone,
public CA certificates). Nothing else of the host is there: no other workspace, not the directory that holds
the workspaces, not the gateway's working directory, database, config, secrets file or logs, no `/home`,
`/root`, `/var`, `/opt`, `/srv` or `/run`. The workspace's own host directory is mounted at `/workspace`,
writable, so `cd ..` reaches the tmpfs root and a symlink a command plants resolves inside this view.

A fresh PID namespace with its own `/proc` shows only the command's own processes (the command is PID 1, so
`/proc/1` is the command, not the launcher); the environment is cleared and rebuilt from a fixed list; no
network namespace is shared unless the connection sets `network: true`, and then the seccomp filter that
refuses socket connections (Unix sockets included) is left out too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MOUNT = "/workspace"
"""Where a workspace's host directory appears inside its sandbox; commands start there."""

SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Host paths shown read-only (a symlink is recreated as the same symlink)."""

SYSTEM_ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "mime.types",
              "nsswitch.conf", "ssl/certs", "ca-certificates", "ssl/openssl.cnf")
"""The `/etc` entries a program needs to start and to check a TLS certificate. Left out on purpose: account
files (`passwd`, `group`, `shadow`), host keys, `ssl/private`, and anything an operator keeps under `/etc`
(a gateway.yaml or a secrets file there stays outside)."""

NETWORK_ETC = ("resolv.conf", "hosts", "gai.conf", "host.conf")
"""Added with `network: true`, so names resolve."""

DNS_DIRECTORIES = ("/run/systemd/resolve", "/run/NetworkManager", "/run/resolvconf")
"""Where `/etc/resolv.conf` usually points; with `network: true` the ones that exist are shown read-only."""

ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": MOUNT, "LANG": "C.UTF-8", "TMPDIR": "/tmp",
               "USER": "sandbox", "LOGNAME": "sandbox"}
"""The whole environment a command starts with; nothing of the gateway's own is passed on."""

SEALED = ("--tmpfs", "/")
"""An empty root: nothing of the host is visible unless it is mounted below."""


def system_view(network: bool) -> list[str]:
    """The read-only host paths: system directories, then the allowed `/etc` entries that exist."""
    args: list[str] = []
    for directory in SYSTEM_DIRECTORIES:
        path = Path(directory)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), directory]
        elif path.is_dir():
            args += ["--ro-bind", directory, directory]
    args += ["--dir", "/etc"]
    for name in (*SYSTEM_ETC, *(NETWORK_ETC if network else ())):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for directory in DNS_DIRECTORIES if network else ():
        args += ["--ro-bind-try", directory, directory]
    return args


def isolation(network: bool) -> list[str]:
    """Namespaces, capabilities and environment; without the network, fd 3 carries the seccomp filter."""
    environment = [arg for name, value in ENVIRONMENT.items() for arg in ("--setenv", name, value)]
    return ["--die-with-parent", "--unshare-user", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--unshare-pid", "--as-pid-1", *([] if network else ["--unshare-net", "--seccomp", "3"]),
            "--cap-drop", "ALL", "--clearenv", *environment]


def sandbox_args(host_directory: Path, *, network: bool) -> list[str]:
    """The `bwrap` arguments before `--`: the workspace at `MOUNT`, the system read-only, nothing else."""
    return [*isolation(network), *SEALED, *system_view(network), "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--bind", str(host_directory), MOUNT, "--remount-ro", "/", "--chdir", MOUNT]


INSTALL_LINE = "apt-get install -y bubblewrap"


def bubblewrap_missing() -> str | None:
    """Why this host cannot run the shell backend, or None when it can (`gateway check` asks, without loading the
    backend itself)."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed on this host; install it with `{INSTALL_LINE}`"
    return None
