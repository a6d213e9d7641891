"""deploy/kubernetes: the service's own manifests, valid for Kubernetes (kubernetes-validate,
strict: unknown fields are errors) and consistent with the app and with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from service.app.factory import create_app
from service.core.config import Settings
from tests.conftest import REPO_ROOT
from tests.provisioning.validators import K8S_VERSION

DEPLOY = REPO_ROOT / "deploy" / "kubernetes"
FILES = sorted(p for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml")


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _by_kind() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in FILES:
        for doc in _docs(path):
            assert doc["kind"] not in out, f"two {doc['kind']}s"
            out[doc["kind"]] = doc
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_manifest_is_valid_kubernetes(path: Path) -> None:
    docs = _docs(path)
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_validation_catches_a_broken_manifest() -> None:
    """The validator is real: a misspelt field and a wrong type are rejected."""
    deployment = _by_kind()["Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    typo = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, K8S_VERSION, strict=True)
    bad_port = {**container, "ports": [{"containerPort": "eight thousand"}]}
    pod = {**deployment["spec"]["template"]["spec"], "containers": [bad_port]}
    broken = {**deployment, "spec": {**deployment["spec"], "template": {
        **deployment["spec"]["template"], "spec": pod}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_kustomization_lists_every_manifest_but_the_secret_example() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text(encoding="utf-8"))
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in FILES if p.name != "secret.example.yaml")


def test_manifests_agree_with_the_app_and_each_other() -> None:
    kinds = _by_kind()
    deployment, service = kinds["Deployment"], kinds["Service"]
    hpa = kinds["HorizontalPodAutoscaler"]
    job, config, secret = kinds["Job"], kinds["ConfigMap"], kinds["Secret"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": deployment["metadata"]["name"]}
    assert hpa["spec"]["minReplicas"] >= 2  # replicas, not one pod

    [api] = pod["spec"]["containers"]
    assert api["command"][:2] == ["gpu-advisor", "serve"]
    port = api["ports"][0]
    assert api["command"][api["command"].index("--port") + 1] == str(port["containerPort"])
    assert service["spec"]["ports"][0]["targetPort"] in (port["name"], port["containerPort"])
    # the probes ask the app's own health routes
    paths = set(create_app(Settings(database_url="sqlite://")).openapi()["paths"])
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz" in paths
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz" in paths
    assert api["resources"]["requests"]["cpu"]  # the HPA's utilization needs a request
    # every setting named exists (a typo would be ignored silently by pydantic-settings)
    fields = {f"GPU_ADVISOR_{name.upper()}" for name in Settings.model_fields}
    assert set(config["data"]) <= fields, set(config["data"]) - fields
    for container in (api, job["spec"]["template"]["spec"]["containers"][0]):
        env = {e["name"]: e for e in container["env"]}
        ref = env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (secret["metadata"]["name"], "database-url")
        assert ref["key"] in secret["stringData"]
        assert container["envFrom"] == [{"configMapRef": {"name": config["metadata"]["name"]}}]
        assert set(env) - {"DATABASE_URL"} <= fields
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")
    assert "gpu-advisor migrate" in " ".join(job["spec"]["template"]["spec"]["containers"][0]
                                             ["command"])
