"""The Kubernetes manifests in deploy/kubernetes: schema-valid for one Kubernetes version, and right.

Schema validation is offline: kubernetes-validate ships the OpenAPI-derived JSON schemas of every
Kubernetes minor version it supports, and these tests block sockets while it runs to prove it needs no
network. Strict mode rejects unknown fields, so a misspelt `readinesProbe` fails instead of being ignored.

Beyond the schema, the checks below assert what makes several Streamlit replicas work behind an ingress:
health probes, sizing, a hardened security context, sticky sessions and one shared cookie secret. Each
check is a function returning a list of problems, and each is also run on a deliberately broken copy,
so a check that can no longer fail is itself a failing test.
"""

from __future__ import annotations

import copy
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
K8S_DIR = ROOT / "deploy" / "kubernetes"
DOCS = ROOT / "docs" / "deploy.md"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes these manifests are written for
CONTAINER_PORT = 8501
HEALTH_PATH = "/_stcore/health"
COOKIE_ENV = "STREAMLIT_SERVER_COOKIE_SECRET"


# ---------------------------------------------------------------------------------------------- loading

def load_docs(path: Path) -> list[dict]:
    with path.open() as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


KUSTOMIZATION = load_docs(K8S_DIR / "kustomization.yaml")[0]
MANIFEST_FILES = sorted(p for p in K8S_DIR.glob("*.yaml") if p.name != "kustomization.yaml")
EXAMPLE_FILES = [p for p in MANIFEST_FILES if p.name.endswith(".example.yaml")]
# What `kubectl apply -k` creates: the files the kustomization lists, in the namespace it sets.
APPLIED = [doc for name in KUSTOMIZATION["resources"] for doc in load_docs(K8S_DIR / name)]
ALL_DOCS = [(path.name, doc) for path in MANIFEST_FILES for doc in load_docs(path)]


def only(kind: str, docs: list[dict] = APPLIED) -> dict:
    found = [doc for doc in docs if doc["kind"] == kind]
    assert len(found) == 1, f"expected exactly one {kind} applied by kustomization.yaml, found {len(found)}"
    return found[0]


def doc_id(item: tuple[str, dict]) -> str:
    name, doc = item
    return f"{name}:{doc['kind']}/{doc['metadata']['name']}"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


# ------------------------------------------------------------------------------------ helpers for checks

def quantity(value: str | int | float) -> float:
    """A Kubernetes resource quantity ("500m", "1", "512Mi", "1G") as a plain number."""
    suffixes = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?", str(value))
    if not match:
        raise ValueError(f"not a resource quantity: {value!r}")
    return float(match.group(1)) * suffixes[match.group(2) or ""]


def resolve_port(port: int | str, container: dict) -> int | None:
    """A probe's or Service's target port (a number or a container port name) as a number."""
    if isinstance(port, int):
        return port
    for declared in container.get("ports", []):
        if declared.get("name") == port:
            return declared["containerPort"]
    return None


def pod_spec(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]


def pod_labels(deployment: dict) -> dict:
    return deployment["spec"]["template"]["metadata"].get("labels", {})


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def cookie_secret_refs(deployment: dict) -> list[tuple[str, str] | None]:
    """Per container: the (Secret name, key) its cookie-secret variable comes from, or None."""
    refs = []
    for container in pod_spec(deployment)["containers"]:
        env = {item["name"]: item for item in container.get("env", [])}
        ref = env.get(COOKIE_ENV, {}).get("valueFrom", {}).get("secretKeyRef")
        refs.append((ref["name"], ref["key"]) if ref and not ref.get("optional", False) else None)
    return refs


# ------------------------------------------------------------------------------------------------ checks

def deployment_problems(deployment: dict) -> list[str]:
    problems = []
    spec = pod_spec(deployment)
    if deployment["spec"].get("replicas", 1) < 2:
        problems.append("fewer than 2 replicas")
    if not selects(deployment["spec"]["selector"].get("matchLabels", {}), pod_labels(deployment)):
        problems.append("Deployment selector does not match its pod labels")
    if spec.get("enableServiceLinks", True):
        problems.append("enableServiceLinks is on: Service env vars could be read as STREAMLIT_* options")

    pod_security = spec.get("securityContext", {})
    for container in spec["containers"]:
        name = container["name"]
        ports = [p["containerPort"] for p in container.get("ports", [])]
        if CONTAINER_PORT not in ports:
            problems.append(f"{name}: does not declare container port {CONTAINER_PORT}")
        for probe_name in ("readinessProbe", "livenessProbe"):
            probe = container.get(probe_name)
            if not probe:
                problems.append(f"{name}: no {probe_name}")
                continue
            http = probe.get("httpGet", {})
            if http.get("path") != HEALTH_PATH:
                problems.append(f"{name}: {probe_name} does not hit {HEALTH_PATH}")
            if resolve_port(http.get("port"), container) != CONTAINER_PORT:
                problems.append(f"{name}: {probe_name} is not on container port {CONTAINER_PORT}")
        if "startupProbe" in container:
            http = container["startupProbe"].get("httpGet", {})
            if http.get("path") != HEALTH_PATH or resolve_port(http.get("port"), container) != CONTAINER_PORT:
                problems.append(f"{name}: startupProbe is not {HEALTH_PATH} on port {CONTAINER_PORT}")

        resources = container.get("resources", {})
        for kind in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                if resource not in resources.get(kind, {}):
                    problems.append(f"{name}: no {resource} in resources.{kind}")
        for resource in ("cpu", "memory"):
            request = resources.get("requests", {}).get(resource)
            limit = resources.get("limits", {}).get(resource)
            if request and limit and quantity(request) > quantity(limit):
                problems.append(f"{name}: {resource} request above its limit")

        security = container.get("securityContext", {})
        non_root = security.get("runAsNonRoot", pod_security.get("runAsNonRoot"))
        uid = security.get("runAsUser", pod_security.get("runAsUser"))
        if non_root is not True or uid == 0:
            problems.append(f"{name}: may run as root")
        if security.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        if "ALL" not in security.get("capabilities", {}).get("drop", []):
            problems.append(f"{name}: does not drop ALL capabilities")
        if security.get("capabilities", {}).get("add"):
            problems.append(f"{name}: adds capabilities")
        if security.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{name}: root filesystem is writable")

        # With a read-only root, /tmp and HOME must be writable volumes.
        empty_dirs = {v["name"] for v in spec.get("volumes", []) if "emptyDir" in v}
        writable = [m["mountPath"] for m in container.get("volumeMounts", [])
                    if m["name"] in empty_dirs and not m.get("readOnly")]
        if "/tmp" not in writable:
            problems.append(f"{name}: no writable emptyDir at /tmp")
        home = {e["name"]: e.get("value") for e in container.get("env", [])}.get("HOME")
        if not home or not any(home == path or home.startswith(path.rstrip("/") + "/") for path in writable):
            problems.append(f"{name}: HOME is not set inside a writable emptyDir")

    refs = cookie_secret_refs(deployment)
    if None in refs:
        problems.append(f"a container does not take {COOKIE_ENV} from a required secretKeyRef")
    elif len(set(refs)) != 1:
        problems.append(f"containers take {COOKIE_ENV} from different Secret keys: {sorted(set(refs))}")
    for container in spec["containers"]:
        for item in container.get("env", []):
            if item["name"] == COOKIE_ENV and "value" in item:
                problems.append(f"{container['name']}: literal cookie secret in the manifest")
    return problems


def service_problems(service: dict, deployment: dict) -> list[str]:
    problems = []
    spec = service["spec"]
    if spec.get("type", "ClusterIP") != "ClusterIP":
        problems.append("Service is not ClusterIP")
    if not selects(spec.get("selector", {}), pod_labels(deployment)):
        problems.append("Service selector does not match the Deployment's pod labels")
    container = pod_spec(deployment)["containers"][0]
    routes = {p["port"]: resolve_port(p.get("targetPort", p["port"]), container) for p in spec["ports"]}
    if routes.get(80) != CONTAINER_PORT:
        problems.append(f"Service port 80 does not reach container port {CONTAINER_PORT}")
    return problems


def ingress_problems(ingress: dict, service: dict) -> list[str]:
    problems = []
    notes = ingress["metadata"].get("annotations", {})
    prefix = "nginx.ingress.kubernetes.io/"
    if notes.get(prefix + "affinity") != "cookie":
        problems.append("no cookie affinity")
    if notes.get(prefix + "affinity-mode", "balanced") != "persistent":
        problems.append("affinity mode is not persistent: scaling up would move browsers off their session")
    if not notes.get(prefix + "session-cookie-name"):
        problems.append("no session-cookie-name")
    if not str(notes.get(prefix + "session-cookie-max-age", "")).isdigit():
        problems.append("no numeric session-cookie-max-age")
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        value = str(notes.get(prefix + timeout, ""))
        if not value.isdigit() or int(value) < 3600:
            problems.append(f"{timeout} below 3600 s: idle websockets would be cut")
    if any(not isinstance(value, str) for value in notes.values()):
        problems.append("an annotation value is not a string")

    ports = service["spec"]["ports"]
    service_ports = {p["port"] for p in ports} | {p["name"] for p in ports if "name" in p}
    backends = [path["backend"]["service"] for rule in ingress["spec"]["rules"]
                for path in rule["http"]["paths"]]
    if not backends:
        problems.append("Ingress has no backend")
    for backend in backends:
        if backend["name"] != service["metadata"]["name"]:
            problems.append(f"Ingress backend {backend['name']} is not the Service")
        if backend["port"].get("number", backend["port"].get("name")) not in service_ports:
            problems.append("Ingress backend port is not a Service port")
    return problems


# ------------------------------------------------------------------------------------ schema validation

def test_the_network_is_really_blocked(no_network):
    with pytest.raises(AssertionError, match="network access attempted"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)


@pytest.mark.parametrize("item", ALL_DOCS, ids=doc_id)
def test_manifest_is_valid_for_the_kubernetes_version(item, no_network):
    _, doc = item
    validated = kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    assert validated == "1.30"


def test_the_validator_rejects_broken_manifests(no_network):
    deployment = only("Deployment")
    typo = copy.deepcopy(deployment)
    container = pod_spec(typo)["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    wrong_type = copy.deepcopy(deployment)
    wrong_type["spec"]["replicas"] = "three"
    no_selector = copy.deepcopy(deployment)
    del no_selector["spec"]["selector"]
    bad_port = copy.deepcopy(only("Service"))
    bad_port["spec"]["ports"][0]["port"] = "eighty"
    for broken in (typo, wrong_type, no_selector, bad_port):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_an_unknown_kind_is_not_silently_accepted(no_network):
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "x"}},
                                     K8S_VERSION, strict=True)


# ----------------------------------------------------------------------------------- kustomization

def test_kustomization_applies_every_manifest_but_the_examples():
    listed = set(KUSTOMIZATION["resources"])
    assert listed == {p.name for p in MANIFEST_FILES} - {p.name for p in EXAMPLE_FILES}
    assert not any(doc["kind"] == "Secret" for doc in APPLIED), "a Secret would overwrite the real key"
    namespace = KUSTOMIZATION["namespace"]
    assert only("Namespace")["metadata"]["name"] == namespace
    for doc in APPLIED:
        assert doc["metadata"].get("namespace", namespace) == namespace


def test_kustomization_image_override_targets_the_container_image():
    image = pod_spec(only("Deployment"))["containers"][0]["image"]
    assert image == "mha-visualizer:latest"
    assert [entry["name"] for entry in KUSTOMIZATION["images"]] == [image.split(":")[0]]


# ------------------------------------------------------------------------------------- the resources

def test_deployment():
    deployment = only("Deployment")
    assert deployment_problems(deployment) == []
    assert deployment["spec"]["replicas"] == 3


DEPLOYMENT_BREAKAGES = [
    (lambda d: d["spec"].update(replicas=1), "fewer than 2 replicas"),
    (lambda d: pod_spec(d)["containers"][0]["readinessProbe"]["httpGet"].update(path="/"),
     "readinessProbe does not hit"),
    (lambda d: pod_spec(d)["containers"][0]["livenessProbe"]["httpGet"].update(port=8080),
     "livenessProbe is not on container port"),
    (lambda d: pod_spec(d)["containers"][0]["resources"].pop("limits"), "no cpu in resources.limits"),
    (lambda d: pod_spec(d)["containers"][0]["resources"]["requests"].update(memory="4Gi"),
     "memory request above its limit"),
    (lambda d: pod_spec(d)["containers"][0]["securityContext"].update(runAsNonRoot=False), "may run as root"),
    (lambda d: pod_spec(d)["securityContext"].update(runAsUser=0), "may run as root"),
    (lambda d: pod_spec(d)["containers"][0]["securityContext"].update(allowPrivilegeEscalation=True),
     "allowPrivilegeEscalation"),
    (lambda d: pod_spec(d)["containers"][0]["securityContext"]["capabilities"].update(drop=["NET_RAW"]),
     "does not drop ALL"),
    (lambda d: pod_spec(d)["containers"][0]["securityContext"].pop("readOnlyRootFilesystem"),
     "root filesystem is writable"),
    (lambda d: pod_spec(d)["containers"][0].update(volumeMounts=[]), "no writable emptyDir at /tmp"),
    (lambda d: pod_spec(d)["containers"][0].update(
        env=[e for e in pod_spec(d)["containers"][0]["env"] if e["name"] != COOKIE_ENV]),
     "required secretKeyRef"),
    (lambda d: pod_spec(d)["containers"].append(
        {**copy.deepcopy(pod_spec(d)["containers"][0]), "name": "second",
         "env": [{"name": COOKIE_ENV, "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}),
     "different Secret keys"),
    (lambda d: pod_spec(d)["containers"][0]["env"].append({"name": COOKIE_ENV, "value": "hunter2"}),
     "literal cookie secret"),
    (lambda d: d["spec"]["selector"]["matchLabels"].update(extra="x"), "selector does not match"),
    (lambda d: pod_spec(d).pop("enableServiceLinks"), "enableServiceLinks"),
]


@pytest.mark.parametrize(("break_it", "expected"), DEPLOYMENT_BREAKAGES,
                         ids=[expected for _, expected in DEPLOYMENT_BREAKAGES])
def test_deployment_checks_catch_breakage(break_it, expected):
    deployment = copy.deepcopy(only("Deployment"))
    break_it(deployment)
    assert any(expected in problem for problem in deployment_problems(deployment))


def test_service():
    assert service_problems(only("Service"), only("Deployment")) == []


def test_service_checks_catch_breakage():
    deployment, service = only("Deployment"), only("Service")
    wrong_selector = copy.deepcopy(service)
    wrong_selector["spec"]["selector"] = {"app.kubernetes.io/name": "something-else"}
    wrong_port = copy.deepcopy(service)
    wrong_port["spec"]["ports"][0]["targetPort"] = 8080
    assert any("selector" in p for p in service_problems(wrong_selector, deployment))
    assert any("port 80" in p for p in service_problems(wrong_port, deployment))


def test_ingress():
    assert ingress_problems(only("Ingress"), only("Service")) == []


def test_ingress_checks_catch_breakage():
    ingress, service = only("Ingress"), only("Service")
    prefix = "nginx.ingress.kubernetes.io/"
    no_affinity = copy.deepcopy(ingress)
    del no_affinity["metadata"]["annotations"][prefix + "affinity"]
    short_timeout = copy.deepcopy(ingress)
    short_timeout["metadata"]["annotations"][prefix + "proxy-read-timeout"] = "60"
    wrong_backend = copy.deepcopy(ingress)
    wrong_backend["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] = "other"
    assert any("cookie affinity" in p for p in ingress_problems(no_affinity, service))
    assert any("proxy-read-timeout" in p for p in ingress_problems(short_timeout, service))
    assert any("not the Service" in p for p in ingress_problems(wrong_backend, service))


def test_pod_disruption_budget_keeps_replicas_up():
    pdb, deployment = only("PodDisruptionBudget"), only("Deployment")
    assert selects(pdb["spec"]["selector"]["matchLabels"], pod_labels(deployment))
    assert pdb["spec"]["maxUnavailable"] < deployment["spec"]["replicas"]


# --------------------------------------------------------------------------------- the cookie secret

def test_the_example_secret_matches_the_deployment_and_holds_no_real_secret():
    (ref,) = set(cookie_secret_refs(only("Deployment")))
    secrets = [doc for path in EXAMPLE_FILES for doc in load_docs(path) if doc["kind"] == "Secret"]
    assert [(s["metadata"]["name"], list(s["stringData"])) for s in secrets] == [(ref[0], [ref[1]])]
    placeholder = secrets[0]["stringData"][ref[1]]
    assert "REPLACE" in placeholder and not re.fullmatch(r"[0-9a-f]{32,}", placeholder)


def test_the_docs_create_the_secret_the_deployment_reads():
    name, key = set(cookie_secret_refs(only("Deployment"))).pop()
    text = DOCS.read_text()
    assert f"create secret generic {name}" in text
    assert f'--from-literal={key}="$(openssl rand -hex 32)"' in text
    holds = text.split("## What one replica holds", 1)[1]
    assert "bench/load.py" in holds and "55 sessions" in holds  # sized from the measured load test


def test_streamlit_reads_every_streamlit_variable_the_manifest_sets():
    """STREAMLIT_SERVER_COOKIE_SECRET really becomes server.cookieSecret in this Streamlit version."""
    env_names = [item["name"] for item in pod_spec(only("Deployment"))["containers"][0]["env"]
                 if item["name"].startswith("STREAMLIT_")]
    assert COOKIE_ENV in env_names
    probe = ("import os\nfrom streamlit import config\n"
             "opts = {o.env_var: k for k, o in config.get_config_options().items()}\n"
             "for name in os.environ['NAMES'].split():\n"
             "    print(name, opts.get(name), config.get_option(opts[name]) if name in opts else None)\n")
    env = {**os.environ, "NAMES": " ".join(env_names), COOKIE_ENV: "same-on-every-replica"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=120, check=True)
    assert f"{COOKIE_ENV} server.cookieSecret same-on-every-replica" in result.stdout.splitlines()
    for line in result.stdout.splitlines():
        assert " None " not in f"{line} ", f"not a Streamlit config option: {line}"
