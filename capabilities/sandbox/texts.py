"""What the seven workspace tools tell the model, in this repository's words (the library's describe a coding agent)."""

from __future__ import annotations

from capabilities.run.tool_replies import ToolText

_REFUSED = ("`Error: Permission denied: ...` for a credential file (`.env`, keys, `.ssh`, `.aws`) or a system path "
            "(`/etc`, `/usr`, `/proc`, ...), which are never available here")

TEXTS = {
    "ls": ToolText(
        summary="List the files and folders in one folder of your workspace. Use it to see what is there before "
                "reading, e.g. `uploads` for what people attached.",
        returns="`Contents of <path>:` then one line per entry, folders ending in `/`, files with their size in "
                "bytes; or a line saying the folder is empty or does not exist.",
        args={"path": "The folder, relative to the workspace or absolute; default `.`, the workspace itself."}),
    "read_file": ToolText(
        summary="Read a text file from your workspace, with line numbers, a slice at a time for long files. Use it "
                "before editing a file.",
        returns=f"The lines, each prefixed with its number, and `... (N more lines)` when the slice stops early; "
                f"or `Error: File '<path>' not found`; or {_REFUSED}.",
        args={"path": "The file, relative to the workspace or absolute.",
              "offset": "Lines to skip from the start; default 0.",
              "limit": "Lines to return; default 2000."}),
    "write_file": ToolText(
        summary="Create a file in your workspace or replace its whole content; folders are created as needed. "
                "Put files meant for the person under `output/`: they are sent into the chat when you finish.",
        returns=f"`Wrote N lines to <path>`; or why nothing was written: the workspace is full, or {_REFUSED}.",
        args={"path": "Where to write, relative to the workspace or absolute.",
              "content": "The file's complete new text."}),
    "edit_file": ToolText(
        summary="Change part of a file in your workspace by replacing an exact passage; read the file first. For "
                "a whole new file use write_file.",
        returns=f"`Edited <path>: replaced N occurrence(s)`; or why nothing changed: the passage is missing or "
                f"occurs more than once, the file changed since you read it, or {_REFUSED}.",
        args={"path": "The file to change.",
              "old_string": "A passage copied exactly from the file; it must occur once unless replace_all is set.",
              "new_string": "What replaces it; empty removes it.",
              "replace_all": "Replace every occurrence rather than exactly one; default false."}),
    "glob": ToolText(
        summary="Find files in your workspace whose path matches a pattern such as `**/*.csv`. Use it to locate "
                "files by name; to search inside them use grep.",
        returns="`Found N file(s) matching '<pattern>':` then one path per line (at most 100, then a count); or "
                "a line saying nothing matched.",
        args={"pattern": "A glob: `*` within a folder, `**` across folders, e.g. `**/*.md`.",
              "path": "The folder to search under; default `.`, the whole workspace."}),
    "grep": ToolText(
        summary="Search the text of the files in your workspace for a regular expression. Matches inside "
                "credential and system files are left out.",
        returns="By default `Files containing '<pattern>':` and one path per line; with output_mode `content` "
                "`path:line: text` per match; with `count` the number of matches (lists stop at 50, then a count); "
                "or `No matches for '<pattern>'`; or the regular expression's error.",
        args={"pattern": "A regular expression, e.g. `total\\s+\\d+`.",
              "path": "A file or folder to search; default: the whole workspace.",
              "glob_pattern": "Only files whose name matches this glob, e.g. `*.py`; default: every file.",
              "output_mode": "`files_with_matches` (default), `content` or `count`.",
              "ignore_hidden": "Skip files and folders whose name starts with `.`; default true."}),
    "execute": ToolText(
        summary="Run a shell command in your workspace, e.g. a script, a conversion or a calculation. A person "
                "may have to approve it first. Commands naming credential or system paths are refused.",
        returns="The command's output (stdout then stderr, cut past a ceiling with `... (output truncated)`); "
                "`Command failed (exit code N):` and the output when it fails; `Error: Command timed out` past "
                "the timeout; or `Error: This workspace does not support command execution.` where it has no "
                "shell.",
        args={"command": "The shell command line, run with `sh -c` in the workspace folder.",
              "timeout": "Seconds before it is stopped; default 120."}),
}
