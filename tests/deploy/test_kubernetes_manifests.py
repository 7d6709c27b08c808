"""Each Kustomize overlay renders and validates strictly; the pieces refer to one another by the right names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gateway.config.schema import load_config

KUBERNETES = Path(__file__).parents[2] / "deploy" / "kubernetes"
VERSION = "1.32"
"""The Kubernetes schemas the manifests are validated against: the oldest release they are meant for."""
CUSTOM_RESOURCES = {("monitoring.coreos.com/v1", "ServiceMonitor")}
"""Kinds kubernetes-validate has no schema for; their shape is checked by hand below."""
WEBHOOK_PREFIXES = ["/telegram/", "/slack/", "/mattermost/"]

Resource = dict[str, Any]


def rendered(overlay: str) -> dict[tuple[str, str], Resource]:
    """`kubectl kustomize` of the overlay, by (kind, name)."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the overlays cannot be rendered here")
    output = subprocess.run(["kubectl", "kustomize", str(KUBERNETES / "overlays" / overlay)], check=True,
                            capture_output=True, text=True, timeout=60).stdout
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(output) if doc}


def by_kind(resources: dict[tuple[str, str], Resource], kind: str) -> list[Resource]:
    return [doc for (found, _), doc in resources.items() if found == kind]


@pytest.mark.parametrize("overlay", ["small", "production"])
def test_the_overlay_renders_and_validates_strictly(overlay: str) -> None:
    resources = rendered(overlay)
    for doc in resources.values():
        if (doc["apiVersion"], doc["kind"]) not in CUSTOM_RESOURCES:
            kubernetes_validate.validate(doc, VERSION, strict=True)
    [config_map] = by_kind(resources, "ConfigMap")
    [deployment] = by_kind(resources, "Deployment")
    [job] = by_kind(resources, "Job")
    assert by_kind(resources, "Secret") == []
    for pod in (deployment["spec"]["template"]["spec"], job["spec"]["template"]["spec"]):
        assert "initContainers" not in pod
        assert {v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v} == {
            config_map["metadata"]["name"]}
        assert [e["secretRef"]["name"] for c in pod["containers"] for e in c["envFrom"]] == ["chat-gateway-secrets"]
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "migrate", "-c", "/etc/chat-gateway/gateway.yaml"]


def test_the_configured_gateway_yaml_is_one_gateway_check_accepts(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(by_kind(rendered("small"), "ConfigMap")[0]["data"]["gateway.yaml"])
    assert [bot.name for bot in load_config(config).bots] == ["team-telegram"]


def test_small_runs_one_replica_that_is_replaced_not_rolled() -> None:
    resources = rendered("small")
    [deployment] = by_kind(resources, "Deployment")
    assert (deployment["spec"]["replicas"], deployment["spec"]["strategy"]) == (1, {"type": "Recreate"})
    assert {kind for kind, _ in resources} == {"ConfigMap", "Deployment", "Job", "Service"}


def test_production_scales_and_its_parts_select_the_gateway_pods() -> None:
    resources = rendered("production")
    [deployment] = by_kind(resources, "Deployment")
    [service] = by_kind(resources, "Service")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    [autoscaler] = by_kind(resources, "HorizontalPodAutoscaler")
    assert autoscaler["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                    "name": deployment["metadata"]["name"]}
    assert deployment["spec"]["replicas"] == autoscaler["spec"]["minReplicas"] >= 2
    [budget] = by_kind(resources, "PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    [policy] = by_kind(resources, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    [ingress] = by_kind(resources, "Ingress")
    paths = [path for rule in ingress["spec"]["rules"] for path in rule["http"]["paths"]]
    assert [path["path"] for path in paths] == WEBHOOK_PREFIXES
    assert {(p["backend"]["service"]["name"], p["backend"]["service"]["port"]["name"]) for p in paths} == {
        (service["metadata"]["name"], "http")}


def test_the_service_monitor_scrapes_the_gateway_service() -> None:
    """ServiceMonitor is a CRD without a schema in kubernetes-validate: its shape, by hand."""
    resources = rendered("production")
    [service] = by_kind(resources, "Service")
    [monitor] = by_kind(resources, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(monitor["spec"]) == {"selector", "endpoints"}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("http", "/metrics")]
    assert set(monitor["spec"]["endpoints"][0]) <= {"port", "path", "interval", "scrapeTimeout"}
    assert "http" in {port["name"] for port in service["spec"]["ports"]}


@pytest.mark.parametrize("overlay", ["small", "production"])
def test_the_probes_ask_the_gateway_where_it_listens(overlay: str, tmp_path: Path) -> None:
    """Readiness is `/readyz` (the database; Redis down is 200 "degraded", a bot that cannot sign in keeps no pod
    out), liveness and start-up `/healthz`, all on the port `gateway.yaml` listens on."""
    resources = rendered(overlay)
    [deployment] = by_kind(resources, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "gateway.yaml"
    config.write_text(by_kind(resources, "ConfigMap")[0]["data"]["gateway.yaml"])
    [port] = [p["containerPort"] for p in container["ports"] if p["name"] == "http"]
    assert port == load_config(config).server.port
    probes = {name: (container[name]["httpGet"]["path"], container[name]["httpGet"]["port"])
              for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes == {"startupProbe": ("/healthz", "http"), "livenessProbe": ("/healthz", "http"),
                      "readinessProbe": ("/readyz", "http")}
