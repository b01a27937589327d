"""The Kubernetes manifests in deploy/kubernetes: schema-valid for one Kubernetes version, and right.

Schema validation is offline: kubernetes-validate ships the OpenAPI-derived JSON schemas of every
Kubernetes minor version it supports, and these tests block sockets while it runs to prove it needs no
network. Strict mode rejects unknown fields, so a misspelt `readinesProbe` fails instead of being ignored.

Beyond the schema, the checks below assert what makes several Streamlit replicas work behind an ingress:
health probes, sizing, a hardened security context, sticky sessions, one shared cookie secret, and one
shared live-class store (a Redis with a persistent volume that the app's REDIS_URL really reaches).
Each check is a function returning a list of problems, and each is also run on a deliberately broken
copy, so a check that can no longer fail is itself a failing test.
"""

from __future__ import annotations

import copy
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import redis
import yaml

from tests.live_server import free_port
from tests.redis_server import REDIS_SERVER

ROOT = Path(__file__).resolve().parents[2]
K8S_DIR = ROOT / "deploy" / "kubernetes"
DOCS = ROOT / "docs" / "deploy.md"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes these manifests are written for
CONTAINER_PORT = 8501
HEALTH_PATH = "/_stcore/health"
COOKIE_ENV = "STREAMLIT_SERVER_COOKIE_SECRET"
APP_SERVICE = "mha-visualizer"
REDIS_SERVICE = "mha-redis"
REDIS_PORT = 6379
REDIS_URL_ENV = "REDIS_URL"
DATA_DIR_ENV = "MHA_DATA_DIR"


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


def only(kind: str, name: str | None = None, docs: list[dict] = APPLIED) -> dict:
    found = [doc for doc in docs if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    what = f"{kind} {name}" if name else kind
    assert len(found) == 1, f"expected exactly one {what} applied by kustomization.yaml, found {len(found)}"
    return found[0]


def app_service() -> dict:
    return only("Service", APP_SERVICE)


def redis_service() -> dict:
    return only("Service", REDIS_SERVICE)


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


def env_values(container: dict) -> dict[str, str | None]:
    """A container's literal environment values (None for one taken from elsewhere)."""
    return {item["name"]: item.get("value") for item in container.get("env", [])}


def redis_options(container: dict) -> dict[str, list[str]]:
    """The redis-server options on a container's command line: {"appendonly": ["yes"], "save": [""], ...}."""
    words = [*container.get("command", []), *container.get("args", [])]
    if words and words[0] == "redis-server":
        words = words[1:]
    options: dict[str, list[str]] = {}
    current = None
    for word in words:
        if word.startswith("--"):
            current = word[2:].lower()
            options[current] = []
        elif current is not None:
            options[current].append(word)
    return options


def cookie_secret_refs(deployment: dict) -> list[tuple[str, str] | None]:
    """Per container: the (Secret name, key) its cookie-secret variable comes from, or None."""
    refs = []
    for container in pod_spec(deployment)["containers"]:
        env = {item["name"]: item for item in container.get("env", [])}
        ref = env.get(COOKIE_ENV, {}).get("valueFrom", {}).get("secretKeyRef")
        refs.append((ref["name"], ref["key"]) if ref and not ref.get("optional", False) else None)
    return refs


# ------------------------------------------------------------------------------------------------ checks

def resource_problems(container: dict) -> list[str]:
    problems, name = [], container["name"]
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
    return problems


def hardening_problems(container: dict, pod_security: dict) -> list[str]:
    """What the namespace's "restricted" Pod Security Standard asks, plus a read-only root."""
    problems, name = [], container["name"]
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
    seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {}))
    if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
        problems.append(f"{name}: no RuntimeDefault seccomp profile (the restricted namespace refuses it)")
    return problems


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

        problems += resource_problems(container) + hardening_problems(container, pod_security)

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


def redis_problems(statefulset: dict, service: dict) -> list[str]:
    """One Redis that keeps what it acknowledged across a restart, reachable through its Service."""
    problems = []
    spec = statefulset["spec"]
    pod = spec["template"]["spec"]
    if spec.get("replicas", 1) != 1:
        problems.append("Redis replicas is not 1: each would be a separate store")
    if not selects(spec["selector"].get("matchLabels", {}), spec["template"]["metadata"].get("labels", {})):
        problems.append("StatefulSet selector does not match its pod labels")
    if spec.get("serviceName") != service["metadata"]["name"]:
        problems.append("StatefulSet serviceName is not the Redis Service")
    if pod.get("enableServiceLinks", True):
        problems.append("Redis: enableServiceLinks is on")

    containers = pod["containers"]
    redis_containers = [c for c in containers
                        if REDIS_PORT in [port["containerPort"] for port in c.get("ports", [])]]
    if len(redis_containers) != 1:
        return [*problems, f"no single container declares port {REDIS_PORT}"]
    container = redis_containers[0]
    name = container["name"]
    image = container["image"]
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    if "@sha256:" not in image and (not tag or tag == "latest"):
        problems.append(f"{name}: image {image} is not pinned by a tag")

    options = redis_options(container)
    if options.get("appendonly") != ["yes"]:
        problems.append(f"{name}: appendonly is not yes: answers since the last snapshot die with the pod")
    if options.get("appendfsync", ["everysec"]) not in (["everysec"], ["always"]):
        problems.append(f"{name}: appendfsync is neither everysec nor always")
    data_dir = (options.get("dir") or [container.get("workingDir", "/data")])[0]
    claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
    mounted = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", []) if not m.get("readOnly")}
    claim = claims.get(mounted.get(data_dir))
    if claim is None:
        problems.append(f"{name}: no persistent volume claim mounted at Redis's dir {data_dir}")
    elif quantity(claim["spec"].get("resources", {}).get("requests", {}).get("storage", "0")) <= 0:
        problems.append(f"{name}: the data volume claim requests no storage")
    if options.get("maxmemory-policy", ["noeviction"]) != ["noeviction"]:
        problems.append(f"{name}: maxmemory-policy evicts keys: rooms and answers would vanish")
    limit = container.get("resources", {}).get("limits", {}).get("memory")
    if options.get("maxmemory") and limit:
        maxmemory = quantity(options["maxmemory"][0].replace("mb", "M").replace("gb", "G"))
        if maxmemory >= quantity(limit):
            problems.append(f"{name}: maxmemory is not below the memory limit")

    for probe_name in ("readinessProbe", "livenessProbe"):
        command = container.get(probe_name, {}).get("exec", {}).get("command", [])
        if command[:1] != ["redis-cli"] or "ping" not in command:
            problems.append(f"{name}: {probe_name} is not `redis-cli ping`")
    problems += resource_problems(container) + hardening_problems(container, pod.get("securityContext", {}))

    service_spec = service["spec"]
    if service_spec.get("type", "ClusterIP") != "ClusterIP":
        problems.append("Redis Service is not ClusterIP (or headless)")
    if not selects(service_spec.get("selector", {}), spec["template"]["metadata"].get("labels", {})):
        problems.append("Redis Service selector does not match the Redis pods")
    for port in service_spec["ports"]:
        target = resolve_port(port.get("targetPort", port["port"]), container)
        if port["port"] == REDIS_PORT and target != REDIS_PORT:
            problems.append(f"Redis Service port {REDIS_PORT} does not reach the container's {REDIS_PORT}")
    if REDIS_PORT not in [port["port"] for port in service_spec["ports"]]:
        problems.append(f"Redis Service has no port {REDIS_PORT}")
    return problems


def service_hosts(service: dict, namespace: str) -> set[str]:
    """The names a pod in the same namespace can reach a Service by."""
    name = service["metadata"]["name"]
    return {name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"}


def redis_url_problems(deployment: dict, service: dict, namespace: str) -> list[str]:
    """Every app container's REDIS_URL reaches the Redis Service; several replicas need one."""
    problems = []
    service_ports = {port["port"] for port in service["spec"]["ports"]}
    for container in pod_spec(deployment)["containers"]:
        name, env = container["name"], env_values(container)
        url = env.get(REDIS_URL_ENV)
        if not url:
            if deployment["spec"].get("replicas", 1) > 1:
                problems.append(f"{name}: several replicas and no {REDIS_URL_ENV}: "
                                "each would keep its own rooms")
            continue
        parts = urlsplit(url)
        try:
            port = parts.port or REDIS_PORT
        except ValueError:
            port = None
        if parts.scheme != "redis":
            problems.append(f"{name}: {REDIS_URL_ENV} is not a redis:// URL")
        if parts.hostname not in service_hosts(service, namespace):
            problems.append(f"{name}: {REDIS_URL_ENV} host {parts.hostname} is not the Service "
                            f"{service['metadata']['name']}")
        if port not in service_ports:
            problems.append(f"{name}: {REDIS_URL_ENV} port {port} is not a port of the Redis Service")
        if not re.fullmatch(r"/?[0-9]*", parts.path):
            problems.append(f"{name}: {REDIS_URL_ENV} does not end in a database number")
        data_dir = env.get(DATA_DIR_ENV)
        empty_dirs = {v["name"] for v in pod_spec(deployment).get("volumes", []) if "emptyDir" in v}
        writable = [m["mountPath"] for m in container.get("volumeMounts", [])
                    if m["name"] in empty_dirs and not m.get("readOnly")]
        if not data_dir or not any(data_dir == path or data_dir.startswith(path.rstrip("/") + "/")
                                   for path in writable):
            problems.append(f"{name}: {DATA_DIR_ENV} is not set inside a writable volume")
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
    bad_port = copy.deepcopy(app_service())
    bad_port["spec"]["ports"][0]["port"] = "eighty"
    redis = only("StatefulSet")
    claim_typo = copy.deepcopy(redis)
    claim_typo["spec"]["volumeClaimTemplate"] = claim_typo["spec"].pop("volumeClaimTemplates")
    exec_probe_as_text = copy.deepcopy(redis)
    pod_spec(exec_probe_as_text)["containers"][0]["readinessProbe"]["exec"]["command"] = "redis-cli ping"
    for broken in (typo, wrong_type, no_selector, bad_port, claim_typo, exec_probe_as_text):
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
    (lambda d: pod_spec(d).pop("securityContext"), "seccomp profile"),
]


@pytest.mark.parametrize(("break_it", "expected"), DEPLOYMENT_BREAKAGES,
                         ids=[expected for _, expected in DEPLOYMENT_BREAKAGES])
def test_deployment_checks_catch_breakage(break_it, expected):
    deployment = copy.deepcopy(only("Deployment"))
    break_it(deployment)
    assert any(expected in problem for problem in deployment_problems(deployment))


def test_service():
    assert service_problems(app_service(), only("Deployment")) == []


def test_service_checks_catch_breakage():
    deployment, service = only("Deployment"), app_service()
    wrong_selector = copy.deepcopy(service)
    wrong_selector["spec"]["selector"] = {"app.kubernetes.io/name": "something-else"}
    wrong_port = copy.deepcopy(service)
    wrong_port["spec"]["ports"][0]["targetPort"] = 8080
    assert any("selector" in p for p in service_problems(wrong_selector, deployment))
    assert any("port 80" in p for p in service_problems(wrong_port, deployment))


def test_ingress():
    assert ingress_problems(only("Ingress"), app_service()) == []


def test_ingress_checks_catch_breakage():
    ingress, service = only("Ingress"), app_service()
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


# ------------------------------------------------------------------------------ the live-class store

def redis_container(statefulset: dict) -> dict:
    (container,) = pod_spec(statefulset)["containers"]
    return container


def test_redis():
    statefulset = only("StatefulSet")
    assert statefulset["metadata"]["name"] == REDIS_SERVICE
    assert redis_problems(statefulset, redis_service()) == []
    options = redis_options(redis_container(statefulset))
    assert options["appendonly"] == ["yes"] and options["dir"] == ["/data"]
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"


def test_the_app_reaches_redis_by_the_service_name_and_port():
    deployment, service = only("Deployment"), redis_service()
    assert redis_url_problems(deployment, service, KUSTOMIZATION["namespace"]) == []
    env = env_values(pod_spec(deployment)["containers"][0])
    assert env[REDIS_URL_ENV] == f"redis://{REDIS_SERVICE}:{REDIS_PORT}/0"
    assert env[DATA_DIR_ENV].startswith("/tmp/")


def test_the_app_and_redis_are_told_apart_by_their_labels():
    """The app's Service, PDB and spread constraint must not pick up the Redis pod, nor the reverse."""
    redis_labels = pod_labels(only("StatefulSet"))
    app_labels = pod_labels(only("Deployment"))
    for selector in (app_service()["spec"]["selector"],
                     only("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                     only("Deployment")["spec"]["selector"]["matchLabels"]):
        assert selects(selector, app_labels) and not selects(selector, redis_labels)
    assert not selects(redis_service()["spec"]["selector"], app_labels)


def set_redis_url(url: str):
    def apply(deployment: dict) -> None:
        for item in pod_spec(deployment)["containers"][0]["env"]:
            if item["name"] == REDIS_URL_ENV:
                item["value"] = url
    return apply


REDIS_URL_BREAKAGES = [
    (set_redis_url("redis://redis:6379/0"), "is not the Service"),
    (set_redis_url("redis://mha-redis.other-namespace:6379/0"), "is not the Service"),
    (set_redis_url("redis://mha-redis:6380/0"), "is not a port of the Redis Service"),
    (set_redis_url("redis://mha-redis:sixty/0"), "is not a port of the Redis Service"),
    (set_redis_url("http://mha-redis:6379/0"), "not a redis:// URL"),
    (lambda d: pod_spec(d)["containers"][0].update(
        env=[e for e in pod_spec(d)["containers"][0]["env"] if e["name"] != REDIS_URL_ENV]),
     "each would keep its own rooms"),
    (lambda d: pod_spec(d)["containers"][0].update(
        env=[e for e in pod_spec(d)["containers"][0]["env"] if e["name"] != DATA_DIR_ENV]),
     f"{DATA_DIR_ENV} is not set inside a writable volume"),
]


@pytest.mark.parametrize(("break_it", "expected"), REDIS_URL_BREAKAGES,
                         ids=[f"{n}-{expected}" for n, (_, expected) in enumerate(REDIS_URL_BREAKAGES)])
def test_redis_url_checks_catch_breakage(break_it, expected):
    deployment = copy.deepcopy(only("Deployment"))
    break_it(deployment)
    problems = redis_url_problems(deployment, redis_service(), KUSTOMIZATION["namespace"])
    assert any(expected in problem for problem in problems), problems


def test_a_redis_service_on_another_port_is_caught_too():
    service = copy.deepcopy(redis_service())
    service["spec"]["ports"][0]["port"] = 6380
    problems = redis_url_problems(only("Deployment"), service, KUSTOMIZATION["namespace"])
    assert any("is not a port of the Redis Service" in problem for problem in problems)
    problems = redis_problems(only("StatefulSet"), service)
    assert any(f"has no port {REDIS_PORT}" in problem for problem in problems)


def set_redis_option(option: str, *values: str):
    def apply(statefulset: dict) -> None:
        container = redis_container(statefulset)
        args, kept, skipping = container["args"], [], False
        for word in args:
            if word.startswith("--"):
                skipping = word == f"--{option}"
            if not skipping:
                kept.append(word)
        container["args"] = kept + ([f"--{option}", *values] if values else [])
    return apply


REDIS_BREAKAGES = [
    (lambda s: s["spec"].pop("volumeClaimTemplates"), "no persistent volume claim"),
    (lambda s: (s["spec"].pop("volumeClaimTemplates"),
                pod_spec(s).update(volumes=[{"name": "data", "emptyDir": {}}])),
     "no persistent volume claim"),
    (lambda s: redis_container(s)["volumeMounts"][0].update(mountPath="/var/lib/redis"),
     "no persistent volume claim"),
    (set_redis_option("dir", "/tmp"), "no persistent volume claim"),
    (lambda s: s["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"].update(storage="0"),
     "requests no storage"),
    (set_redis_option("appendonly", "no"), "appendonly is not yes"),
    (set_redis_option("appendonly"), "appendonly is not yes"),
    (set_redis_option("appendfsync", "no"), "appendfsync"),
    (set_redis_option("maxmemory-policy", "allkeys-lru"), "evicts keys"),
    (set_redis_option("maxmemory", "2gb"), "maxmemory is not below"),
    (lambda s: s["spec"].update(replicas=2), "replicas is not 1"),
    (lambda s: s["spec"].update(serviceName="redis"), "serviceName"),
    (lambda s: redis_container(s).update(image="redis"), "not pinned"),
    (lambda s: redis_container(s).update(image="registry.example.com:5000/redis:latest"), "not pinned"),
    (lambda s: redis_container(s)["readinessProbe"].update(exec={"command": ["true"]}), "readinessProbe"),
    (lambda s: redis_container(s).pop("livenessProbe"), "livenessProbe"),
    (lambda s: redis_container(s)["resources"].pop("requests"), "no memory in resources.requests"),
    (lambda s: pod_spec(s)["securityContext"].update(runAsUser=0), "may run as root"),
    (lambda s: redis_container(s)["securityContext"].update(allowPrivilegeEscalation=True),
     "allowPrivilegeEscalation"),
    (lambda s: redis_container(s)["securityContext"]["capabilities"].pop("drop"), "does not drop ALL"),
    (lambda s: pod_spec(s)["securityContext"].pop("seccompProfile"), "seccomp profile"),
    (lambda s: redis_container(s)["ports"][0].update(containerPort=6380), f"declares port {REDIS_PORT}"),
    (lambda s: pod_spec(s).pop("enableServiceLinks"), "enableServiceLinks"),
]


@pytest.mark.parametrize(("break_it", "expected"), REDIS_BREAKAGES,
                         ids=[f"{n}-{expected}" for n, (_, expected) in enumerate(REDIS_BREAKAGES)])
def test_redis_checks_catch_breakage(break_it, expected):
    statefulset = copy.deepcopy(only("StatefulSet"))
    break_it(statefulset)
    problems = redis_problems(statefulset, redis_service())
    assert any(expected in problem for problem in problems), problems


def test_redis_service_checks_catch_breakage():
    statefulset = only("StatefulSet")
    wrong_selector = copy.deepcopy(redis_service())
    wrong_selector["spec"]["selector"] = pod_labels(only("Deployment"))
    wrong_target = copy.deepcopy(redis_service())
    wrong_target["spec"]["ports"][0]["targetPort"] = 6380
    node_port = copy.deepcopy(redis_service())
    node_port["spec"]["type"] = "NodePort"
    assert any("selector" in p for p in redis_problems(statefulset, wrong_selector))
    assert any("does not reach" in p for p in redis_problems(statefulset, wrong_target))
    assert any("not ClusterIP" in p for p in redis_problems(statefulset, node_port))


@pytest.mark.skipif(not (os.environ.get("REQUIRE_REDIS") == "1" or REDIS_SERVER),
                    reason="no redis-server here (apt-get install redis-server); CI sets REQUIRE_REDIS=1")
@pytest.mark.slow
def test_redis_server_accepts_the_manifest_options(tmp_path):
    """The StatefulSet's options are real redis-server options, and give an append-only store."""
    assert REDIS_SERVER, "REQUIRE_REDIS=1 but there is no redis-server"
    options = redis_options(redis_container(only("StatefulSet")))
    options |= {"dir": [str(tmp_path)], "port": [str(free_port())], "bind": ["127.0.0.1"],
                "daemonize": ["no"], "logfile": [str(tmp_path / "redis.log")]}
    command = [REDIS_SERVER, *(word for key, values in options.items() for word in (f"--{key}", *values))]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(host="127.0.0.1", port=int(options["port"][0]), socket_connect_timeout=1,
                             decode_responses=True)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert server.poll() is None, (tmp_path / "redis.log").read_text()
                time.sleep(0.05)
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        assert client.config_get("save") == {"save": ""}
        client.set("answer", "kept")
        client.shutdown()  # SIGTERM's path: flush the append-only file and exit
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(timeout=20)
    assert any((tmp_path / "appendonlydir").iterdir()), "no append-only file written"


def test_the_docs_say_when_to_switch_to_redis():
    text = DOCS.read_text()
    section = text.split("## Rooms of a live class: embedded store or Redis", 1)[1].split("\n## ", 1)[0]
    url = env_values(pod_spec(only("Deployment"))["containers"][0])[REDIS_URL_ENV]
    for needed in (url, DATA_DIR_ENV, "classroom.sqlite3", "appendonly", "redis.yaml",
                   "200 concurrent answers", "bench/class_load.py"):
        assert needed in section, needed


# --------------------------------------------------------------------------------- the cookie secret

def example_secrets() -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for path in EXAMPLE_FILES for doc in load_docs(path)
            if doc["kind"] == "Secret"}


def test_the_example_secret_matches_the_deployment_and_holds_no_real_secret():
    (ref,) = set(cookie_secret_refs(only("Deployment")))
    secret = example_secrets()[ref[0]]
    assert list(secret["stringData"]) == [ref[1]]
    placeholder = secret["stringData"][ref[1]]
    assert "REPLACE" in placeholder and not re.fullmatch(r"[0-9a-f]{32,}", placeholder)


def test_every_example_secret_is_one_the_deployment_reads():
    read = {cookie_secret_refs(only("Deployment"))[0], teacher_key_ref(only("Deployment"))}
    assert {(name, key) for name, doc in example_secrets().items() for key in doc["stringData"]} == read


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


# --------------------------------------------------------------- the teacher key and the client address

TEACHER_KEY_ENV, TEACHER_KEY_FILE_ENV = "MHA_TEACHER_KEY", "MHA_TEACHER_KEY_FILE"
CLIENT_IP_HEADER_ENV = "MHA_CLIENT_IP_HEADER"
INGRESS_CLIENT_HEADERS = {"X-Forwarded-For", "X-Real-IP"}  # what ingress-nginx sets to the peer's address


def teacher_key_ref(deployment: dict) -> tuple[str, str] | None:
    """The (Secret name, key) whose file MHA_TEACHER_KEY_FILE names in the app container, or None if
    the variable does not name a file of a required Secret volume mounted read-only."""
    spec = pod_spec(deployment)
    container = spec["containers"][0]
    path = env_values(container).get(TEACHER_KEY_FILE_ENV)
    if not path:
        return None
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        folder = mount["mountPath"].rstrip("/") + "/"
        secret = volumes.get(mount["name"], {}).get("secret")
        if not path.startswith(folder) or not secret or not mount.get("readOnly") or secret.get("optional"):
            continue
        file_name = path[len(folder):]
        items = secret.get("items")
        keys = {item["path"]: item["key"] for item in items} if items else {file_name: file_name}
        if file_name in keys:
            return secret["secretName"], keys[file_name]
    return None


def teacher_key_problems(deployment: dict) -> list[str]:
    problems = []
    for container in pod_spec(deployment)["containers"]:
        if env_values(container).get(TEACHER_KEY_ENV):
            problems.append(f"{container['name']}: literal teacher key in the manifest")
    if teacher_key_ref(deployment) is None:
        problems.append(f"{TEACHER_KEY_FILE_ENV} names no file of a required, read-only Secret volume: "
                        "anyone who reaches the site could start rooms")
    return problems


def client_address_problems(deployment: dict, ingress: dict) -> list[str]:
    header = env_values(pod_spec(deployment)["containers"][0]).get(CLIENT_IP_HEADER_ENV)
    if header not in INGRESS_CLIENT_HEADERS:
        return [f"{CLIENT_IP_HEADER_ENV} is {header!r}, not a header the ingress sets: every browser would "
                "count as the ingress controller's one address"]
    if ingress["spec"].get("ingressClassName") != "nginx":
        return [f"{CLIENT_IP_HEADER_ENV} trusts {header}, which only ingress-nginx is known to overwrite"]
    return []


def test_the_teacher_key_comes_from_a_secret_file_and_the_client_from_the_ingress():
    deployment = only("Deployment")
    assert teacher_key_problems(deployment) == []
    assert teacher_key_ref(deployment) == ("mha-visualizer-teacher-key", "teacherKey")
    assert client_address_problems(deployment, only("Ingress")) == []


def set_env(name: str, value: str | None):
    def apply(deployment: dict) -> None:
        container = pod_spec(deployment)["containers"][0]
        container["env"] = [e for e in container["env"] if e["name"] != name]
        if value is not None:
            container["env"].append({"name": name, "value": value})
    return apply


def edit_teacher_volume(change):
    def apply(deployment: dict) -> None:
        (volume,) = [v for v in pod_spec(deployment)["volumes"] if v["name"] == "teacher-key"]
        change(volume, pod_spec(deployment)["containers"][0])
    return apply


TEACHER_KEY_BREAKAGES = [
    (set_env(TEACHER_KEY_ENV, "hunter2"), "literal teacher key"),
    (set_env(TEACHER_KEY_FILE_ENV, None), "anyone who reaches the site"),
    (set_env(TEACHER_KEY_FILE_ENV, "/etc/mha-visualizer/teacherKey"), "anyone who reaches the site"),
    (edit_teacher_volume(lambda v, c: v["secret"].update(optional=True)), "anyone who reaches the site"),
    (edit_teacher_volume(lambda v, c: v.pop("secret") and v.update(emptyDir={})), "anyone who reaches"),
    (edit_teacher_volume(lambda v, c: [m.update(readOnly=False) for m in c["volumeMounts"]
                                       if m["name"] == "teacher-key"]), "anyone who reaches the site"),
]


@pytest.mark.parametrize(("break_it", "expected"), TEACHER_KEY_BREAKAGES,
                         ids=[f"{n}-{expected}" for n, (_, expected) in enumerate(TEACHER_KEY_BREAKAGES)])
def test_teacher_key_checks_catch_breakage(break_it, expected):
    deployment = copy.deepcopy(only("Deployment"))
    break_it(deployment)
    assert any(expected in problem for problem in teacher_key_problems(deployment))


@pytest.mark.parametrize("header", [None, "X-Client-IP", "Forwarded"])
def test_client_address_checks_catch_breakage(header):
    deployment = copy.deepcopy(only("Deployment"))
    set_env(CLIENT_IP_HEADER_ENV, header)(deployment)
    problems = client_address_problems(deployment, only("Ingress"))
    assert any("not a header the ingress sets" in p for p in problems)
    other_controller = copy.deepcopy(only("Ingress"))
    other_controller["spec"]["ingressClassName"] = "traefik"
    assert client_address_problems(only("Deployment"), other_controller)


def test_the_docs_create_the_teacher_key_and_state_the_threat_model():
    name, key = teacher_key_ref(only("Deployment"))
    text = DOCS.read_text()
    assert f"create secret generic {name}" in text and f"--from-literal={key}=" in text
    threats = text.split("## Threat model", 1)[1].split("\n## ", 1)[0]
    for setting in (TEACHER_KEY_ENV, TEACHER_KEY_FILE_ENV, CLIENT_IP_HEADER_ENV):
        assert setting in threats
    for who in ("deployer", "teacher", "student", "anyone who can reach"):
        assert who in threats.lower()


def test_the_image_bakes_no_teacher_key():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert not re.search(r"^\s*(ENV|ARG)\b[^#\n]*MHA_TEACHER_KEY", dockerfile, re.MULTILINE)
