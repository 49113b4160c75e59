"""Write the E2 embedded corpus (envs/sv_env_config_verification/data/), deterministically.

Two kinds of files, both as a user would keep them in a repository:
- kubernetes/*.yaml: Pods, Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, RBAC, Services, NetworkPolicies
  (many files hold several documents). Hardened workloads follow the restricted Pod Security Standard; the others
  carry the mistakes seen in real repositories, from a single flaw in a hardened manifest to copy-pasted defaults.
- terraform/*.tf: AWS S3 / EBS / RDS / security groups / IAM and GCP storage / firewall modules, with variables.

Labels are not written by hand: `labels.json` holds what the oracle (every available scanner) finds in each file,
with the oracle's tool versions, and a file is vulnerable iff it has a finding. YAML is emitted in one canonical
style (yaml.safe_dump, keys in the order written) so a parsed-and-dumped copy equals the file, which keeps the
diffs of synthetic (vulnerable, secure) pairs minimal.

    python scripts/build_e2_embedded.py            # rewrite the files and labels.json (runs the oracle)
    python scripts/build_e2_embedded.py --check    # exit 1 if any file or label differs from what would be written
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "envs" / "sv_env_config_verification" / "data"
sys.path[:0] = [str(ROOT / "envs")]

Doc = dict[str, Any]


def digest(image: str) -> str:
    """A pinned reference: a stable, made-up sha256 for the tag (the corpus is never pulled)."""
    return f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def dump(docs: list[Doc]) -> str:
    """Canonical YAML; the JSON round trip unshares objects the builders reuse (else YAML writes anchors)."""
    return yaml.safe_dump_all(json.loads(json.dumps(docs)), sort_keys=False, default_flow_style=False, width=120)


# --- Kubernetes building blocks ---

HARDENED_CONTEXT: Doc = {
    "allowPrivilegeEscalation": False,
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "capabilities": {"drop": ["ALL"]},
}


def container(
    name: str,
    image: str,
    *,
    port: int | None = None,
    cpu: str = "250m",
    memory: str = "256Mi",
    hardened: bool = True,
    pinned: bool = True,
    limits: bool = True,
    probe: str | None = "/healthz",
    args: list[str] | None = None,
    env: list[Doc] | None = None,
    mounts: list[Doc] | None = None,
    context: Doc | None = None,
) -> Doc:
    spec: Doc = {"name": name, "image": digest(image) if pinned else image}
    if args:
        spec["args"] = args
    if port:
        spec["ports"] = [{"name": "http" if port != 5432 else "postgres", "containerPort": port}]
    if env:
        spec["env"] = env
    resources: Doc = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": "1" if cpu in ("500m", "1") else "500m", "memory": memory}
    spec["resources"] = resources
    if probe and port:
        spec["readinessProbe"] = {"httpGet": {"path": probe, "port": port}, "periodSeconds": 10}
        spec["livenessProbe"] = {"httpGet": {"path": probe, "port": port}, "initialDelaySeconds": 15}
    if hardened or context:
        spec["securityContext"] = {**(HARDENED_CONTEXT if hardened else {}), **(context or {})}
    if mounts:
        spec["volumeMounts"] = mounts
    return spec


def pod_spec(
    containers: list[Doc],
    *,
    hardened: bool = True,
    service_account: str | None = None,
    volumes: list[Doc] | None = None,
    extra: Doc | None = None,
) -> Doc:
    spec: Doc = {}
    if service_account:
        spec["serviceAccountName"] = service_account
    if hardened:
        spec["automountServiceAccountToken"] = False
        spec["securityContext"] = {
            "runAsNonRoot": True,
            "runAsUser": 10001,
            "runAsGroup": 10001,
            "fsGroup": 10001,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
    spec.update(extra or {})
    spec["containers"] = containers
    if volumes:
        spec["volumes"] = volumes
    return spec


def meta(name: str, namespace: str | None, app: str | None = None) -> Doc:
    data: Doc = {"name": name}
    if namespace:
        data["namespace"] = namespace
    data["labels"] = {"app.kubernetes.io/name": app or name, "app.kubernetes.io/part-of": "shop"}
    return data


def workload(kind: str, name: str, namespace: str, spec: Doc, *, replicas: int = 2, service: str | None = None) -> Doc:
    selector = {"matchLabels": {"app.kubernetes.io/name": name}}
    template = {"metadata": {"labels": {"app.kubernetes.io/name": name}}, "spec": spec}
    body: Doc = {"selector": selector, "template": template}
    if kind in ("Deployment", "StatefulSet"):
        body = {"replicas": replicas, **body}
    if kind == "StatefulSet":
        body = {"serviceName": service or name, **body}
    api = "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": meta(name, namespace), "spec": body}


def pod(name: str, namespace: str, spec: Doc) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, namespace), "spec": spec}


def cronjob(name: str, namespace: str, schedule: str, spec: Doc) -> Doc:
    spec = {**spec, "restartPolicy": "OnFailure"}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta(name, namespace),
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"backoffLimit": 2, "template": {"spec": spec}}},
        },
    }


def job(name: str, namespace: str, spec: Doc) -> Doc:
    spec = {**spec, "restartPolicy": "Never"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(name, namespace),
        "spec": {"backoffLimit": 1, "ttlSecondsAfterFinished": 3600, "template": {"spec": spec}},
    }


def service(
    name: str, namespace: str, port: int, target: int, *, kind: str = "ClusterIP", headless: bool = False
) -> Doc:
    spec: Doc = {"type": kind}
    if headless:
        spec = {"clusterIP": "None"}
    spec["selector"] = {"app.kubernetes.io/name": name}
    spec["ports"] = [{"name": "http" if target != 5432 else "postgres", "port": port, "targetPort": target}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace), "spec": spec}


def network_policy(name: str, namespace: str, app: str, from_app: str | None, port: int) -> Doc:
    ingress_from: list[Doc] = (
        [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": from_app}}}]
        if from_app
        else [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]
    )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta(name, namespace, app),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": ingress_from, "ports": [{"protocol": "TCP", "port": port}]}],
        },
    }


def service_account(name: str, namespace: str) -> Doc:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta(name, namespace),
        "automountServiceAccountToken": False,
    }


def role(kind: str, name: str, namespace: str | None, rules: list[Doc]) -> Doc:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, namespace),
        "rules": rules,
    }


def binding(kind: str, name: str, namespace: str | None, role_kind: str, subject: str, subject_ns: str) -> Doc:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": subject_ns}],
    }


def secret_env(name: str, secret: str, key: str) -> Doc:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


TMP = [{"name": "tmp", "emptyDir": {}}]
TMP_MOUNT = [{"name": "tmp", "mountPath": "/tmp"}]


def kubernetes_files() -> dict[str, list[Doc]]:
    """Every Kubernetes file of the corpus, by file name."""
    files: dict[str, list[Doc]] = {}

    # Hardened workloads and objects.
    files["storefront.yaml"] = [
        workload(
            "Deployment",
            "storefront",
            "shop",
            pod_spec(
                [container("storefront", "ghcr.io/acme/storefront:2.14.1", port=8080, mounts=TMP_MOUNT)],
                service_account="storefront",
                volumes=TMP,
            ),
            replicas=3,
        ),
        service("storefront", "shop", 80, 8080),
        network_policy("storefront-ingress", "shop", "storefront", None, 8080),
    ]
    files["orders-api.yaml"] = [
        service_account("orders-api", "shop"),
        workload(
            "Deployment",
            "orders-api",
            "shop",
            pod_spec(
                [
                    container(
                        "orders-api",
                        "ghcr.io/acme/orders-api:1.9.0",
                        port=8080,
                        env=[
                            {"name": "DB_HOST", "value": "orders-db.shop.svc"},
                            {"name": "LOG_LEVEL", "value": "info"},
                        ],
                        mounts=[
                            *TMP_MOUNT,
                            {"name": "db-credentials", "mountPath": "/var/run/secrets/db", "readOnly": True},
                        ],
                    )
                ],
                service_account="orders-api",
                volumes=[*TMP, {"name": "db-credentials", "secret": {"secretName": "orders-db", "defaultMode": 288}}],
            ),
        ),
        service("orders-api", "shop", 80, 8080),
    ]
    files["orders-db.yaml"] = [
        workload(
            "StatefulSet",
            "orders-db",
            "shop",
            pod_spec(
                [
                    container(
                        "postgres",
                        "docker.io/library/postgres:16.4",
                        port=5432,
                        cpu="500m",
                        memory="1Gi",
                        probe=None,
                        env=[
                            {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
                            {"name": "POSTGRES_PASSWORD_FILE", "value": "/var/run/secrets/db/password"},
                        ],
                        mounts=[
                            {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                            {"name": "run", "mountPath": "/var/run/postgresql"},
                            {"name": "db-credentials", "mountPath": "/var/run/secrets/db", "readOnly": True},
                        ],
                        context={"runAsUser": 999},
                    )
                ],
                volumes=[
                    {"name": "run", "emptyDir": {}},
                    {"name": "db-credentials", "secret": {"secretName": "orders-db"}},
                ],
            ),
            replicas=1,
        ),
        service("orders-db", "shop", 5432, 5432, headless=True),
    ]
    files["orders-db.yaml"][0]["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}},
        }
    ]
    files["session-cache.yaml"] = [
        workload(
            "StatefulSet",
            "session-cache",
            "shop",
            pod_spec(
                [
                    container(
                        "redis",
                        "docker.io/library/redis:7.4.1",
                        port=6379,
                        probe=None,
                        args=["--save", "", "--appendonly", "no"],
                        mounts=[{"name": "data", "mountPath": "/data"}],
                    )
                ],
                volumes=[{"name": "data", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}}],
            ),
            replicas=1,
        ),
        service("session-cache", "shop", 6379, 6379, headless=True),
        network_policy("session-cache-clients", "shop", "session-cache", "storefront", 6379),
    ]
    files["image-prepuller.yaml"] = [
        workload(
            "DaemonSet",
            "image-prepuller",
            "kube-system",
            pod_spec(
                [container("pause", "registry.k8s.io/pause:3.10", cpu="10m", memory="16Mi", probe=None)],
                extra={
                    "initContainers": [
                        container(
                            "pull-storefront",
                            "ghcr.io/acme/storefront:2.14.1",
                            cpu="10m",
                            memory="32Mi",
                            probe=None,
                            args=["/bin/true"],
                        )
                    ],
                    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                },
            ),
        ),
    ]
    files["orders-db-backup.yaml"] = [
        service_account("orders-db-backup", "shop"),
        cronjob(
            "orders-db-backup",
            "shop",
            "15 2 * * *",
            pod_spec(
                [
                    container(
                        "pg-dump",
                        "ghcr.io/acme/pg-backup:1.3.2",
                        cpu="200m",
                        memory="512Mi",
                        probe=None,
                        args=["--host=orders-db.shop.svc", "--bucket=s3://acme-backups/orders"],
                        mounts=[
                            *TMP_MOUNT,
                            {"name": "db-credentials", "mountPath": "/var/run/secrets/db", "readOnly": True},
                        ],
                    )
                ],
                service_account="orders-db-backup",
                volumes=[*TMP, {"name": "db-credentials", "secret": {"secretName": "orders-db"}}],
            ),
        ),
    ]
    files["orders-migrate-job.yaml"] = [
        job(
            "orders-migrate",
            "shop",
            pod_spec(
                [
                    container(
                        "migrate",
                        "ghcr.io/acme/orders-api:1.9.0",
                        cpu="100m",
                        memory="128Mi",
                        probe=None,
                        args=["migrate", "--to=latest-schema"],
                        mounts=[{"name": "db-credentials", "mountPath": "/var/run/secrets/db", "readOnly": True}],
                    )
                ],
                volumes=[{"name": "db-credentials", "secret": {"secretName": "orders-db"}}],
            ),
        ),
    ]
    files["config-reader-rbac.yaml"] = [
        service_account("config-reloader", "shop"),
        role(
            "Role",
            "config-reloader",
            "shop",
            [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
        ),
        binding("RoleBinding", "config-reloader", "shop", "Role", "config-reloader", "shop"),
    ]
    files["metrics-reader-clusterrole.yaml"] = [
        role(
            "ClusterRole",
            "metrics-reader",
            None,
            [
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "pods", "services", "endpoints"],
                    "verbs": ["get", "list", "watch"],
                },
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        ),
        binding("ClusterRoleBinding", "metrics-reader", None, "ClusterRole", "prometheus", "monitoring"),
    ]
    files["default-deny-netpol.yaml"] = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny-all", "namespace": "payments"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "allow-dns-egress", "namespace": "payments"},
            "spec": {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        },
    ]
    files["public-services.yaml"] = [
        service("storefront-public", "shop", 443, 8443, kind="LoadBalancer"),
        service("orders-api-internal", "shop", 80, 8080),
    ]
    files["notifications-worker.yaml"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta("notifications-worker", "shop"),
            "data": {"QUEUE_URL": "amqp://rabbitmq.shop.svc:5672", "BATCH_SIZE": "50"},
        },
        workload(
            "Deployment",
            "notifications-worker",
            "shop",
            pod_spec(
                [
                    container(
                        "worker",
                        "ghcr.io/acme/notifications:0.8.3",
                        cpu="100m",
                        memory="128Mi",
                        probe=None,
                        env=[secret_env("SMTP_PASSWORD", "smtp", "password")],
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
    ]
    files["toolbox-pod.yaml"] = [
        pod(
            "toolbox",
            "ops",
            pod_spec(
                [
                    container(
                        "toolbox",
                        "ghcr.io/acme/toolbox:2024.11",
                        cpu="100m",
                        memory="128Mi",
                        probe=None,
                        args=["sleep", "3600"],
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
    ]
    files["payments-namespace.yaml"] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": "payments",
                "labels": {
                    "pod-security.kubernetes.io/enforce": "restricted",
                    "pod-security.kubernetes.io/audit": "restricted",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "payments-quota", "namespace": "payments"},
            "spec": {
                "hard": {"requests.cpu": "8", "requests.memory": "16Gi", "limits.cpu": "16", "limits.memory": "32Gi"}
            },
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "payments-defaults", "namespace": "payments"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "default": {"cpu": "500m", "memory": "256Mi"},
                        "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                    }
                ]
            },
        },
    ]
    files["checkout.yaml"] = [
        workload(
            "Deployment",
            "checkout",
            "payments",
            pod_spec(
                [container("checkout", "ghcr.io/acme/checkout:3.2.0", port=8080, mounts=TMP_MOUNT)],
                service_account="checkout",
                volumes=TMP,
            ),
            replicas=3,
        ),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": meta("checkout", "payments"),
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": "checkout"}}},
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": meta("checkout", "payments"),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "checkout"},
                "minReplicas": 3,
                "maxReplicas": 12,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                    }
                ],
            },
        },
    ]
    files["grafana.yaml"] = [
        workload(
            "Deployment",
            "grafana",
            "monitoring",
            pod_spec(
                [
                    container(
                        "grafana",
                        "docker.io/grafana/grafana:11.3.0",
                        port=3000,
                        probe="/api/health",
                        cpu="200m",
                        memory="512Mi",
                        env=[secret_env("GF_SECURITY_ADMIN_PASSWORD__FILE", "grafana", "admin-password-path")],
                        mounts=[{"name": "storage", "mountPath": "/var/lib/grafana"}, *TMP_MOUNT],
                        context={"runAsUser": 472},
                    )
                ],
                volumes=[{"name": "storage", "persistentVolumeClaim": {"claimName": "grafana"}}, *TMP],
            ),
            replicas=1,
        ),
        service("grafana", "monitoring", 80, 3000),
    ]
    files["zookeeper.yaml"] = [
        workload(
            "StatefulSet",
            "zookeeper",
            "data",
            pod_spec(
                [
                    container(
                        "zookeeper",
                        "docker.io/library/zookeeper:3.9.2",
                        port=2181,
                        probe=None,
                        cpu="500m",
                        memory="1Gi",
                        mounts=[{"name": "data", "mountPath": "/data"}, {"name": "logs", "mountPath": "/datalog"}],
                        context={"runAsUser": 1000},
                    )
                ],
                volumes=[{"name": "logs", "emptyDir": {}}],
            ),
            replicas=3,
            service="zookeeper-headless",
        ),
        service("zookeeper-headless", "data", 2181, 2181, headless=True),
    ]
    files["zookeeper.yaml"][0]["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
        }
    ]

    # Vulnerable: one flaw in an otherwise hardened manifest.
    files["search-api-latest-tag.yaml"] = [
        workload(
            "Deployment",
            "search-api",
            "shop",
            pod_spec(
                [
                    container(
                        "search-api",
                        "ghcr.io/acme/search-api:latest",
                        port=8080,
                        pinned=False,
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
        service("search-api", "shop", 80, 8080),
    ]
    files["recommendations-no-limits.yaml"] = [
        workload(
            "Deployment",
            "recommendations",
            "shop",
            pod_spec(
                [
                    container(
                        "recommendations",
                        "ghcr.io/acme/recommendations:4.0.2",
                        port=8080,
                        limits=False,
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
    ]
    files["vpn-gateway-capabilities.yaml"] = [
        workload(
            "Deployment",
            "vpn-gateway",
            "network",
            pod_spec(
                [
                    container(
                        "wireguard",
                        "ghcr.io/acme/wireguard:1.0.20210914",
                        probe=None,
                        context={"capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN", "SYS_ADMIN"]}},
                    )
                ],
            ),
            replicas=1,
        ),
    ]
    files["image-resizer-escalation.yaml"] = [
        workload(
            "Deployment",
            "image-resizer",
            "media",
            pod_spec(
                [
                    container(
                        "resizer",
                        "ghcr.io/acme/image-resizer:1.4.7",
                        port=8080,
                        context={"allowPrivilegeEscalation": True},
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
    ]
    files["ledger-writable-rootfs.yaml"] = [
        workload(
            "StatefulSet",
            "ledger",
            "payments",
            pod_spec(
                [
                    container(
                        "ledger",
                        "ghcr.io/acme/ledger:5.1.0",
                        port=8080,
                        cpu="500m",
                        memory="512Mi",
                        context={"readOnlyRootFilesystem": False},
                    )
                ],
            ),
            replicas=1,
        ),
    ]
    files["billing-secret-env.yaml"] = [
        workload(
            "Deployment",
            "billing",
            "payments",
            pod_spec(
                [
                    container(
                        "billing",
                        "ghcr.io/acme/billing:2.7.5",
                        port=8080,
                        env=[
                            {"name": "STRIPE_API_KEY", "value": "sk_live_51Hc9ExampleNotARealKey0000"},
                            {"name": "DB_PASSWORD", "value": "billing-prod-2024!"},
                        ],
                        mounts=TMP_MOUNT,
                    )
                ],
                volumes=TMP,
            ),
        ),
        service("billing", "payments", 80, 8080),
    ]
    files["edge-proxy-hostnetwork.yaml"] = [
        workload(
            "Deployment",
            "edge-proxy",
            "ingress",
            pod_spec(
                [container("envoy", "docker.io/envoyproxy/envoy:v1.31.2", port=8443, probe="/ready")],
                extra={"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"},
            ),
        ),
        service("edge-proxy", "ingress", 443, 8443, kind="LoadBalancer"),
        network_policy("edge-proxy", "ingress", "edge-proxy", None, 8443),
    ]
    files["report-job-root.yaml"] = [
        job(
            "monthly-report",
            "finance",
            pod_spec(
                [
                    container(
                        "report",
                        "ghcr.io/acme/reports:1.2.0",
                        probe=None,
                        args=["generate", "--month=previous"],
                        context={"runAsNonRoot": False, "runAsUser": 0},
                    )
                ],
                extra={},
            ),
        ),
    ]
    files["report-job-root.yaml"][0]["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] = False
    files["report-job-root.yaml"][0]["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0

    # Vulnerable: node agents and CI with host access.
    files["node-exporter.yaml"] = [
        workload(
            "DaemonSet",
            "node-exporter",
            "monitoring",
            {
                "hostNetwork": True,
                "hostPID": True,
                "containers": [
                    {
                        "name": "node-exporter",
                        "image": "quay.io/prometheus/node-exporter:v1.8.2",
                        "args": ["--path.procfs=/host/proc", "--path.sysfs=/host/sys", "--path.rootfs=/host/root"],
                        "ports": [{"name": "metrics", "containerPort": 9100}],
                        "resources": {"limits": {"cpu": "250m", "memory": "180Mi"}},
                        "volumeMounts": [
                            {"name": "proc", "mountPath": "/host/proc", "readOnly": True},
                            {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
                            {"name": "root", "mountPath": "/host/root", "readOnly": True},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "proc", "hostPath": {"path": "/proc"}},
                    {"name": "sys", "hostPath": {"path": "/sys"}},
                    {"name": "root", "hostPath": {"path": "/"}},
                ],
            },
        ),
        service("node-exporter", "monitoring", 9100, 9100, headless=True),
    ]
    files["fluentd-daemonset.yaml"] = [
        service_account("fluentd", "logging"),
        workload(
            "DaemonSet",
            "fluentd",
            "logging",
            {
                "serviceAccountName": "fluentd",
                "containers": [
                    {
                        "name": "fluentd",
                        "image": "docker.io/fluent/fluentd-kubernetes-daemonset:v1-debian-elasticsearch",
                        "env": [{"name": "FLUENT_ELASTICSEARCH_HOST", "value": "elasticsearch.logging.svc"}],
                        "securityContext": {"runAsUser": 0},
                        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"memory": "512Mi"}},
                        "volumeMounts": [
                            {"name": "varlog", "mountPath": "/var/log"},
                            {"name": "containers", "mountPath": "/var/lib/docker/containers", "readOnly": True},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "varlog", "hostPath": {"path": "/var/log"}},
                    {"name": "containers", "hostPath": {"path": "/var/lib/docker/containers"}},
                ],
            },
        ),
        role(
            "ClusterRole",
            "fluentd",
            None,
            [{"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]}],
        ),
        binding("ClusterRoleBinding", "fluentd", None, "ClusterRole", "fluentd", "logging"),
    ]
    files["ci-docker-builder-pod.yaml"] = [
        pod(
            "docker-builder",
            "ci",
            {
                "containers": [
                    {
                        "name": "docker",
                        "image": "docker:24-dind",
                        "securityContext": {"privileged": True},
                        "volumeMounts": [{"name": "docker-sock", "mountPath": "/var/run/docker.sock"}],
                    },
                    {
                        "name": "builder",
                        "image": "ghcr.io/acme/ci-builder",
                        "command": ["sleep", "infinity"],
                    },
                ],
                "volumes": [{"name": "docker-sock", "hostPath": {"path": "/var/run/docker.sock", "type": "Socket"}}],
            },
        ),
    ]
    files["log-cleanup-cronjob.yaml"] = [
        cronjob(
            "log-cleanup",
            "ops",
            "0 * * * *",
            {
                "containers": [
                    {
                        "name": "cleanup",
                        "image": "busybox",
                        "command": ["sh", "-c", "find /var/log/apps -mtime +7 -delete"],
                        "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": True},
                        "volumeMounts": [{"name": "applogs", "mountPath": "/var/log/apps"}],
                    }
                ],
                "volumes": [{"name": "applogs", "hostPath": {"path": "/var/log/apps"}}],
            },
        ),
    ]
    files["legacy-admin-pod.yaml"] = [
        pod(
            "legacy-admin",
            "default",
            {
                "hostPID": True,
                "hostIPC": True,
                "containers": [
                    {
                        "name": "shell",
                        "image": "ubuntu:latest",
                        "command": ["sleep", "infinity"],
                        "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                    }
                ],
            },
        ),
    ]
    files["wordpress-quickstart.yaml"] = [
        workload(
            "Deployment",
            "wordpress",
            "blog",
            {
                "containers": [
                    {
                        "name": "wordpress",
                        "image": "wordpress:6.6-apache",
                        "ports": [{"containerPort": 80}],
                        "env": [
                            {"name": "WORDPRESS_DB_HOST", "value": "wordpress-mysql"},
                            {"name": "WORDPRESS_DB_PASSWORD", "value": "changeme123"},
                        ],
                    }
                ],
            },
            replicas=1,
        ),
        service("wordpress", "blog", 80, 80, kind="LoadBalancer"),
    ]
    files["analytics-sidecar.yaml"] = [
        workload(
            "Deployment",
            "analytics",
            "shop",
            pod_spec(
                [
                    container("analytics", "ghcr.io/acme/analytics:1.0.4", port=8080, mounts=TMP_MOUNT),
                    {
                        "name": "log-forwarder",
                        "image": "docker.io/fluent/fluent-bit:3.1.9",
                        "volumeMounts": TMP_MOUNT,
                    },
                ],
                volumes=TMP,
            ),
        ),
    ]

    # Vulnerable: RBAC.
    files["ci-deployer-rbac.yaml"] = [
        service_account("ci-deployer", "ci"),
        role("ClusterRole", "ci-deployer", None, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        binding("ClusterRoleBinding", "ci-deployer", None, "ClusterRole", "ci-deployer", "ci"),
    ]
    files["ops-debug-role.yaml"] = [
        role(
            "Role",
            "ops-debug",
            "shop",
            [
                {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["*"]},
            ],
        ),
        binding("RoleBinding", "ops-debug", "shop", "Role", "oncall", "ops"),
    ]
    files["operator-clusterrole.yaml"] = [
        role(
            "ClusterRole",
            "queue-operator",
            None,
            [
                {"apiGroups": ["queues.acme.io"], "resources": ["*"], "verbs": ["get", "list", "watch", "update"]},
                {
                    "apiGroups": [""],
                    "resources": ["configmaps", "services"],
                    "verbs": ["get", "list", "create", "update"],
                },
            ],
        ),
    ]
    return files


# --- Terraform ---

TERRAFORM: dict[str, str] = {
    "s3-artifacts-private.tf": """\
variable "environment" {
  type    = string
  default = "prod"
}

resource "aws_s3_bucket" "artifacts" {
  bucket = "acme-${var.environment}-build-artifacts"
  acl    = "private"

  versioning {
    enabled = true
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm     = "aws:kms"
        kms_master_key_id = aws_kms_key.artifacts.arn
      }
    }
  }

  tags = {
    Environment = var.environment
    Team        = "platform"
  }
}

resource "aws_kms_key" "artifacts" {
  description             = "Build artifacts"
  deletion_window_in_days = 30
  enable_key_rotation     = true
}

resource "aws_s3_bucket_public_access_block" "artifacts" {
  bucket                  = aws_s3_bucket.artifacts.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}
""",
    "s3-backups-sse-s3.tf": """\
resource "aws_s3_bucket" "backups" {
  bucket = "acme-db-backups"
  acl    = "private"

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }

  lifecycle_rule {
    id      = "expire-old-backups"
    enabled = true

    expiration {
      days = 35
    }
  }
}

resource "aws_s3_bucket_public_access_block" "backups" {
  bucket                  = aws_s3_bucket.backups.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}
""",
    "s3-website-public.tf": """\
resource "aws_s3_bucket" "website" {
  bucket = "acme-marketing-site"
  acl    = "public-read"

  website {
    index_document = "index.html"
    error_document = "404.html"
  }
}
""",
    "s3-logs-unencrypted.tf": """\
resource "aws_s3_bucket" "access_logs" {
  bucket = "acme-alb-access-logs"
  acl    = "log-delivery-write"

  lifecycle_rule {
    id      = "expire"
    enabled = true

    expiration {
      days = 90
    }
  }
}

resource "aws_s3_bucket_public_access_block" "access_logs" {
  bucket                  = aws_s3_bucket.access_logs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}
""",
    "s3-data-lake-public-write.tf": """\
resource "aws_s3_bucket" "uploads" {
  bucket = "acme-partner-uploads"
  acl    = "public-read-write"

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }
}
""",
    "ebs-encrypted.tf": """\
variable "availability_zone" {
  type    = string
  default = "eu-west-1a"
}

resource "aws_ebs_volume" "elasticsearch_data" {
  availability_zone = var.availability_zone
  size              = 200
  type              = "gp3"
  encrypted         = true
  kms_key_id        = "arn:aws:kms:eu-west-1:111122223333:key/3f2a9c1e-ebs"

  tags = {
    Name = "elasticsearch-data"
  }
}
""",
    "ebs-unencrypted.tf": """\
resource "aws_ebs_volume" "scratch" {
  availability_zone = "eu-west-1b"
  size              = 500
  type              = "st1"

  tags = {
    Name = "etl-scratch"
  }
}

resource "aws_volume_attachment" "scratch" {
  device_name = "/dev/sdh"
  volume_id   = aws_ebs_volume.scratch.id
  instance_id = "i-0a1b2c3d4e5f67890"
}
""",
    "ebs-encryption-disabled.tf": """\
resource "aws_ebs_volume" "jenkins_home" {
  availability_zone = "us-east-1a"
  size              = 100
  encrypted         = false

  tags = {
    Name = "jenkins-home"
  }
}
""",
    "rds-postgres-private.tf": """\
variable "db_password" {
  type      = string
  sensitive = true
}

resource "aws_db_subnet_group" "orders" {
  name       = "orders"
  subnet_ids = ["subnet-0a1b2c3d", "subnet-4e5f6a7b"]
}

resource "aws_db_instance" "orders" {
  identifier                = "orders-prod"
  engine                    = "postgres"
  engine_version            = "16.4"
  instance_class            = "db.m6g.large"
  allocated_storage         = 100
  db_subnet_group_name      = aws_db_subnet_group.orders.name
  username                  = "orders"
  password                  = var.db_password
  storage_encrypted         = true
  kms_key_id                = "arn:aws:kms:eu-west-1:111122223333:key/rds-orders"
  publicly_accessible       = false
  backup_retention_period   = 14
  deletion_protection       = true
  skip_final_snapshot       = false
  final_snapshot_identifier = "orders-prod-final"
}
""",
    "rds-mysql-public.tf": """\
resource "aws_db_instance" "reporting" {
  identifier          = "reporting"
  engine              = "mysql"
  engine_version      = "8.0"
  instance_class      = "db.t3.medium"
  allocated_storage   = 50
  username            = "admin"
  password            = var.reporting_password
  publicly_accessible = true
  storage_encrypted   = true
  skip_final_snapshot = true
}

variable "reporting_password" {
  type      = string
  sensitive = true
}
""",
    "rds-unencrypted.tf": """\
resource "aws_db_instance" "legacy_crm" {
  identifier          = "legacy-crm"
  engine              = "mariadb"
  instance_class      = "db.t3.small"
  allocated_storage   = 20
  username            = "crm"
  password            = var.crm_password
  publicly_accessible = false
  storage_encrypted   = false
  skip_final_snapshot = true
}

variable "crm_password" {
  type      = string
  sensitive = true
}
""",
    "sg-bastion-office.tf": """\
resource "aws_security_group" "bastion" {
  name        = "bastion"
  description = "SSH from the office VPN only"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "ssh from office"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["203.0.113.0/24"]
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["10.0.0.0/8"]
  }
}
""",
    "sg-app-internal.tf": """\
resource "aws_security_group" "app" {
  name        = "app"
  description = "App servers reachable from the load balancer subnets"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "http from the ALB subnets"
    from_port   = 8080
    to_port     = 8080
    protocol    = "tcp"
    cidr_blocks = ["10.0.1.0/24", "10.0.2.0/24"]
  }
}
""",
    "sg-ssh-world.tf": """\
resource "aws_security_group" "legacy_ssh" {
  name        = "legacy-ssh"
  description = "Temporary SSH access"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "ssh"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
""",
    "sg-rule-rdp-world.tf": """\
resource "aws_security_group" "windows" {
  name        = "windows-jump"
  description = "Windows jump host"
  vpc_id      = "vpc-0a1b2c3d"
}

resource "aws_security_group_rule" "rdp" {
  type              = "ingress"
  from_port         = 3389
  to_port           = 3389
  protocol          = "tcp"
  cidr_blocks       = ["0.0.0.0/0"]
  security_group_id = aws_security_group.windows.id
}
""",
    "sg-database-all-ports.tf": """\
resource "aws_security_group" "db" {
  name        = "db-debug"
  description = "Opened during an incident"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    from_port        = 0
    to_port          = 65535
    protocol         = "tcp"
    cidr_blocks      = ["0.0.0.0/0"]
    ipv6_cidr_blocks = ["::/0"]
  }
}
""",
    "iam-reader-policy.tf": """\
resource "aws_iam_policy" "artifact_reader" {
  name        = "artifact-reader"
  description = "Read build artifacts"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["s3:GetObject", "s3:ListBucket"]
      Resource = ["arn:aws:s3:::acme-prod-build-artifacts", "arn:aws:s3:::acme-prod-build-artifacts/*"]
    }]
  })
}
""",
    "iam-role-scoped.tf": """\
resource "aws_iam_role" "lambda_thumbnails" {
  name = "lambda-thumbnails"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "lambda.amazonaws.com" }
    }]
  })
}

resource "aws_iam_role_policy" "lambda_thumbnails" {
  name = "thumbnails"
  role = aws_iam_role.lambda_thumbnails.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["s3:GetObject", "s3:PutObject"]
      Resource = "arn:aws:s3:::acme-media/*"
    }]
  })
}
""",
    "iam-admin-policy.tf": """\
resource "aws_iam_policy" "ci_admin" {
  name        = "ci-admin"
  description = "Lets CI do everything"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = "*"
      Resource = "*"
    }]
  })
}
""",
    "iam-s3-star.tf": """\
resource "aws_iam_user_policy" "etl" {
  name = "etl-s3"
  user = "etl-runner"

  policy = <<EOF
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:*"],
      "Resource": "*"
    }
  ]
}
EOF
}
""",
    "gcs-private-bucket.tf": """\
resource "google_storage_bucket" "invoices" {
  name                        = "acme-invoices-eu"
  location                    = "EU"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  versioning {
    enabled = true
  }
}

resource "google_storage_bucket_iam_member" "invoices_reader" {
  bucket = google_storage_bucket.invoices.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:billing@acme-prod.iam.gserviceaccount.com"
}
""",
    "gcs-public-assets.tf": """\
resource "google_storage_bucket" "static_assets" {
  name                        = "acme-static-assets"
  location                    = "US"
  uniform_bucket_level_access = true
}

resource "google_storage_bucket_iam_member" "public_read" {
  bucket = google_storage_bucket.static_assets.name
  role   = "roles/storage.objectViewer"
  member = "allUsers"
}
""",
    "gcs-authenticated-users.tf": """\
resource "google_storage_bucket" "exports" {
  name     = "acme-analytics-exports"
  location = "EU"
}

resource "google_storage_bucket_iam_binding" "exports_readers" {
  bucket  = google_storage_bucket.exports.name
  role    = "roles/storage.objectViewer"
  members = ["allAuthenticatedUsers"]
}
""",
    "gcp-firewall-internal.tf": """\
resource "google_compute_firewall" "allow_internal" {
  name    = "allow-internal"
  network = "prod-vpc"

  allow {
    protocol = "tcp"
    ports    = ["0-65535"]
  }

  source_ranges = ["10.128.0.0/9"]
}

resource "google_compute_firewall" "allow_iap_ssh" {
  name    = "allow-iap-ssh"
  network = "prod-vpc"

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  source_ranges = ["35.235.240.0/20"]
}
""",
    "gcp-firewall-ssh-world.tf": """\
resource "google_compute_firewall" "allow_ssh" {
  name    = "allow-ssh"
  network = "default"

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  source_ranges = ["0.0.0.0/0"]
  target_tags   = ["ssh"]
}
""",
    "gcp-firewall-rdp-world.tf": """\
resource "google_compute_firewall" "windows_rdp" {
  name      = "windows-rdp"
  network   = "corp-vpc"
  direction = "INGRESS"

  allow {
    protocol = "tcp"
    ports    = ["3389"]
  }

  source_ranges = ["0.0.0.0/0"]
}
""",
    "vpc-network.tf": """\
resource "aws_vpc" "main" {
  cidr_block           = "10.0.0.0/16"
  enable_dns_hostnames = true

  tags = {
    Name = "main"
  }
}

resource "aws_subnet" "private_a" {
  vpc_id            = aws_vpc.main.id
  cidr_block        = "10.0.1.0/24"
  availability_zone = "eu-west-1a"
}

resource "aws_subnet" "private_b" {
  vpc_id            = aws_vpc.main.id
  cidr_block        = "10.0.2.0/24"
  availability_zone = "eu-west-1b"
}
""",
    "aurora-cluster.tf": """\
resource "aws_rds_cluster" "events" {
  cluster_identifier      = "events"
  engine                  = "aurora-postgresql"
  engine_version          = "15.4"
  master_username         = "events"
  master_password         = var.events_password
  storage_encrypted       = true
  kms_key_id              = "arn:aws:kms:eu-west-1:111122223333:key/aurora-events"
  backup_retention_period = 7
  deletion_protection     = true
}

variable "events_password" {
  type      = string
  sensitive = true
}
""",
    "web-stack-mixed.tf": """\
resource "aws_security_group" "web" {
  name        = "web"
  description = "Public web tier"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "https"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_ebs_volume" "web_cache" {
  availability_zone = "eu-west-1a"
  size              = 50
  encrypted         = true
}

resource "aws_s3_bucket" "web_uploads" {
  bucket = "acme-web-uploads"
  acl    = "private"
}
""",
}


def write(check: bool) -> int:
    """Write (or, with check, compare) every corpus file and labels.json, removing files the build no longer makes;
    return the exit status."""
    from sv_env_config_verification.data import label_files  # the oracle lives in the package
    from sv_shared.data.embedded import check_or_write

    files: dict[str, tuple[str, str]] = {}
    for name, docs in kubernetes_files().items():
        files[f"kubernetes/{name}"] = ("kubernetes", dump(docs))
    for name, text in TERRAFORM.items():
        files[f"terraform/{name}"] = ("terraform", text)
    labels = label_files({path: (kind, text) for path, (kind, text) in files.items()})
    outputs = {OUTPUT / path: text for path, (_, text) in files.items()}
    outputs[OUTPUT / "labels.json"] = json.dumps(labels, indent=2, sort_keys=True) + "\n"
    status = check_or_write(outputs, check=check, script="scripts/build_e2_embedded.py")
    for folder in ("kubernetes", "terraform"):
        for existing in sorted((OUTPUT / folder).glob("*")) if (OUTPUT / folder).is_dir() else []:
            if existing not in outputs:
                if check:
                    print(f"unexpected: {existing.relative_to(ROOT)}", file=sys.stderr)
                    status = 1
                else:
                    existing.unlink()
                    print(f"removed {existing.relative_to(ROOT)}")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report differences instead of writing")
    return write(parser.parse_args().check)


if __name__ == "__main__":
    raise SystemExit(main())
