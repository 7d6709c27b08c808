"""What `gateway check` refuses about MCP servers, at the line and by name, and `gateway mcp probe`."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capabilities import default_registry
from gateway.checks.report import Report, check_file
from gateway.cli.main import app
from gateway.config.secrets import SecretSource
from tests.support.mcp_fakes.http_server import TOKEN, http_mcp_server_in_thread
from tests.support.mcp_runs import SERVER_SCRIPT

BASE = f"""\
agents:
  - name: helper
    model: test
    mcp_servers: [issues]
bots:
  - name: team-telegram
    platform: telegram
    token: ${{TG_TOKEN}}
    agent: helper
mcp_servers:
  - name: issues
    command: {sys.executable}
    args: [{SERVER_SCRIPT}]
    tool_approval: {{issues_list_issues: never}}
"""
SECRETS = SecretSource(environ={"TG_TOKEN": "123:abc", "GH_TOKEN": "ghp-secret"})
GITHUB = "  - name: github\n    url: https://mcp.example.org/mcp\n"


def check(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "gateway.yaml"
    path.write_text(text)
    return check_file(path, registry=default_registry(), secrets=SECRETS)


def messages(report: Report, problems: tuple = ()) -> list[str]:
    return [line.split(": ", 1)[1] for line in report.lines(problems or report.errors)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    old: str
    new: str
    problem: str


CASES = [
    Case(id="unknown-server", old="mcp_servers: [issues]", new="mcp_servers: [isues]",
         problem="agents['helper'].mcp_servers[0].server: 'isues' is not one of mcp_servers (issues)"),
    Case(id="bound-twice", old="mcp_servers: [issues]", new="mcp_servers: [issues, issues]",
         problem="agents['helper'].mcp_servers[1].server: 'issues' is bound twice"),
    Case(id="name-not-a-prefix", old="  - name: issues\n", new="  - name: Issues-Tracker\n",
         problem="mcp_servers['Issues-Tracker'].name: String should match pattern"),
    Case(id="prefixes-collide", old="mcp_servers:\n", new="mcp_servers:\n" + GITHUB.replace("github", "issues_x"),
         problem="mcp_servers['issues'].name: 'issues' and 'issues_x' prefix each other"),
    Case(id="prefix-shadows-a-capability-tool", old="mcp_servers:\n", new="mcp_servers:\n" + GITHUB.replace(
        "github", "read"),
         problem="mcp_servers['read'].name: 'read' prefixes the capability tool(s) read_channel_history, "),
    Case(id="name-used-twice", old="mcp_servers:\n", new="mcp_servers:\n" + GITHUB.replace("github", "issues"),
         problem="mcp_servers['issues'].name: 'issues' is used twice in mcp_servers"),
    Case(id="tool-name-too-long", old="    tool_approval:", new=f"    allowed_tools: [{'x' * 60}]\n    tool_approval:",
         problem=f"mcp_servers['issues'].allowed_tools[0]: 'issues_{'x' * 60}' is not a name a model can call"),
    Case(id="metadata-url", old="mcp_servers:\n", new="mcp_servers:\n" + GITHUB.replace(
        "https://mcp.example.org/mcp", "http://169.254.169.254/mcp"),
         problem="mcp_servers['github'].url: '169.254.169.254' is a link-local or cloud metadata address"),
    Case(id="url-with-credentials", old="mcp_servers:\n", new="mcp_servers:\n" + GITHUB.replace(
        "https://", "https://me:pw@"), problem="mcp_servers['github'].url: must not carry credentials"),
    Case(id="literal-secret-in-a-header", old="mcp_servers:\n",
         new="mcp_servers:\n" + GITHUB + "    headers: {Authorization: Bearer ghp-literal}\n",
         problem="mcp_servers['github'].headers: Authorization: write the credential as a ${ENV_VAR} reference"),
    Case(id="url-and-command", old="    args:", new="    url: https://mcp.example.org/mcp\n    args:",
         problem="give either url (streamable HTTP) or command (stdio), exactly one"),
    Case(id="approval-key-not-prefixed", old="issues_list_issues: never", new="list_issues: never",
         problem="mcp_servers['issues'].tool_approval.list_issues: 'list_issues' is not a tool id of 'issues'"),
    Case(id="approval-key-outside-the-allowlist", old="    tool_approval:",
         new="    allowed_tools: [create_issue]\n    tool_approval:",
         problem="'issues_list_issues' is not in the server's allowed_tools (offered: issues_create_issue)"),
    Case(id="rename-not-callable", old="mcp_servers: [issues]",
         new="mcp_servers: [{server: issues, tool_overrides: {issues_create_issue: {name: 'file a bug'}}}]",
         problem="agents['helper'].mcp_servers[0].tool_overrides.issues_create_issue.name: 'file a bug' is not a "
                 "name a model can call"),
    Case(id="override-field", old="mcp_servers: [issues]",
         new="mcp_servers: [{server: issues, tool_overrides: {issues_create_issue: {title: Bug}}}]",
         problem="agents['helper'].mcp_servers[0].tool_overrides.issues_create_issue: only name and description can "
                 "be overridden, not title"),
    Case(id="rename-takes-a-capability-tools-name", old="mcp_servers: [issues]",
         new="capabilities: [planning]\n    mcp_servers: [{server: issues, tool_overrides: "
             "{issues_create_issue: {name: write_plan}}}]",
         problem="agents['helper'].mcp_servers[0].tool_overrides.issues_create_issue.name: 'write_plan' is already "
                 "the name of planning.write_plan"),
    Case(id="binding-mode-for-an-unknown-tool", old="    agent: helper\n",
         new="    agent: helper\n    binding: {approvals: {tool_approval: {isues_create_issue: required}}}\n",
         problem="no capability offers a tool 'isues_create_issue'"),
]


def test_a_valid_config_with_an_mcp_server_checks_clean(tmp_path: Path) -> None:
    text = BASE.replace("    agent: helper\n", "    agent: helper\n    binding: {approvals: {tool_approval: "
                                              "{issues_create_issue: never}}}\n")
    report = check(tmp_path, text)
    assert report.errors == () and report.unset == ()


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_a_mistake_is_refused_naming_the_field(tmp_path: Path, case: Case) -> None:
    assert BASE.count(case.old) == 1
    found = messages(check(tmp_path, BASE.replace(case.old, case.new)))
    assert any(case.problem in line for line in found), found


def test_a_server_no_agent_binds_is_a_warning(tmp_path: Path) -> None:
    report = check(tmp_path, BASE.replace("    mcp_servers: [issues]\n", ""))
    assert report.errors == ()
    assert messages(report, report.warnings) == [
        "mcp_servers['issues'].name: no agent binds 'issues', so its tools reach nobody; name it in an agent's "
        "mcp_servers, or remove it"]


def test_a_literal_secret_in_a_header_is_refused_without_repeating_it(tmp_path: Path) -> None:
    text = BASE.replace("mcp_servers:\n", "mcp_servers:\n" + GITHUB + "    headers: {X-Api-Key: ghp-literal-1234}\n")
    found = messages(check(tmp_path, text))
    assert any("X-Api-Key: write the credential as a ${ENV_VAR} reference" in line for line in found), found
    assert not any("ghp-literal-1234" in line for line in found)


def test_an_unset_header_reference_is_named_apart_from_the_errors(tmp_path: Path) -> None:
    header = '    headers: {Authorization: "Bearer ${NOPE}"}\n'
    text = BASE.replace("mcp_servers:\n", "mcp_servers:\n" + GITHUB + header)
    report = check(tmp_path, text)
    assert report.errors == ()
    assert messages(report, report.unset) == [
        "mcp_servers['github'].headers.Authorization: NOPE is not set in the environment or the secrets file"]


@pytest.fixture(scope="module")
def tracker_url() -> object:
    with http_mcp_server_in_thread() as url:
        yield url


def test_probe_lists_the_prefixed_tools_and_whether_each_asks(tmp_path: Path, tracker_url: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ISSUES_MCP_TOKEN", TOKEN)
    config = tmp_path / "gateway.yaml"
    config.write_text(BASE.replace(f"    command: {sys.executable}\n    args: [{SERVER_SCRIPT}]\n", f"""\
    url: {tracker_url}
    headers: {{Authorization: "Bearer ${{ISSUES_MCP_TOKEN}}"}}
    allowed_tools: [list_issues, create_issue, delete_project]
"""))
    result = CliRunner().invoke(app, ["mcp", "probe", "issues", "-c", str(config)])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()[1:]}
    assert result.output.splitlines()[0] == "issues: 5 tool(s)"
    assert "read-only, runs without asking" in lines["issues_list_issues"]
    assert "not read-only, asks first" in lines["issues_create_issue"]
    assert "left out: not in allowed_tools" in lines["issues_read_secret_note"]


def test_probe_of_a_server_that_is_down_says_so_and_fails(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(BASE.replace(f"    command: {sys.executable}\n    args: [{SERVER_SCRIPT}]\n",
                                   "    url: http://127.0.0.1:9/mcp\n    timeout: 5\n"))
    result = CliRunner().invoke(app, ["mcp", "probe", "issues", "-c", str(config)])
    assert result.exit_code == 1 and "issues: cannot be reached" in result.output


def test_probe_of_an_unknown_server_names_the_configured_ones(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(BASE)
    result = CliRunner().invoke(app, ["mcp", "probe", "github", "-c", str(config)])
    assert result.exit_code == 2 and "'github' is not one of mcp_servers (issues)" in result.output
