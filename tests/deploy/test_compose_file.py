"""`deploy/compose.yaml` is valid Compose and runs the migration once, before the replicas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

DEPLOY = Path(__file__).parents[2] / "deploy"


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    checked = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                              str(DEPLOY / "compose.yaml")], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_one_migrate_run_precedes_the_replicas_which_share_postgres_and_redis() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert services["migrate"]["command"][0] == "migrate" and services["migrate"]["restart"] == "no"
    gateway = services["gateway"]
    assert gateway["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert gateway["deploy"]["replicas"] >= 2
    assert {"DATABASE_URL", "REDIS_URL"} <= set(gateway["environment"])
    assert ":" not in gateway["environment"]["DATABASE_URL"].split("@")[0].removeprefix("postgresql://"), \
        "no password in the URL: it comes from secrets.env"
    assert "/readyz" in " ".join(gateway["healthcheck"]["test"])
