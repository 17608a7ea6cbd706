"""`gpuwise export k8s`: a Kubernetes Job for one node, a JobSet for several.

Each pod asks for its GPUs as the ``nvidia.com/gpu`` extended resource (NVIDIA device plugin), lands only on
nodes whose GPU feature discovery label ``nvidia.com/gpu.product`` names the GPU (names.py), gets /dev/shm as
a memory-backed emptyDir (the container runtime's 64 MiB default starves PyTorch's DataLoader workers and
NCCL), and runs gpuwise's exporter as a native sidecar: an init container with ``restartPolicy: Always``
(Kubernetes 1.29+, beta and on by default since 1.29), which starts first, serves /metrics for the pod's
whole life and does not keep the Job from completing when the training container exits. Prometheus finds it
through the ``prometheus.io/*`` pod annotations.

Several nodes: a JobSet (jobset.x-k8s.io/v1alpha2) with one indexed Job of N pods; JobSet's headless service
gives pod 0 the stable name ``<jobset>-<job>-0-0.<jobset>`` that torchrun's rendezvous points at, and each
pod's rank is its ``JOB_COMPLETION_INDEX``. Pure: values in, text out.
"""

from __future__ import annotations

from gpuwise.catalog.specs import resolve_gpu
from gpuwise.errors import UsageError
from gpuwise.export import yamltext
from gpuwise.export.names import GFD_PRODUCT_LABEL, gfd_products
from gpuwise.export.target import Job, Target
from gpuwise.export.torchrun import torchrun_argv
from gpuwise.locale import _

EXPORTER_PORT = 9400  # the exporter's default port (`gpuwise exporter --port`)
_REPLICATED_JOB = "node"
Doc = dict[str, yamltext.Node]


def _check_vendor(target: Target) -> None:
    vendor = resolve_gpu(target.gpu).vendor
    if vendor != "NVIDIA":
        raise UsageError(
            _("The Kubernetes export asks for nvidia.com/gpu, and {gpu} is an {vendor} GPU").format(
                gpu=target.gpu, vendor=vendor
            ),
            fix=_("export skypilot or torchrun for this GPU, or plan with an NVIDIA GPU (--gpu H100)"),
        )


def _node_placement(target: Target) -> Doc:
    """The pod spec's node selection: one product label value -> nodeSelector; several -> node affinity."""
    products = gfd_products(target.gpu)
    spec: Doc = {}
    if len(products) == 1:
        spec["nodeSelector"] = {GFD_PRODUCT_LABEL: products[0]}
    elif products:
        term: Doc = {
            "matchExpressions": [{"key": GFD_PRODUCT_LABEL, "operator": "In", "values": list(products)}]
        }
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    # GPU node pools are commonly tainted (GKE, AKS, the GPU operator's guides) so only GPU pods land there
    spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return spec


def _exporter_sidecar(job: Job) -> Doc:
    return {
        "name": "gpuwise-exporter",
        "image": job.image,
        "restartPolicy": "Always",  # native sidecar: runs beside the main container, never blocks completion
        # the pod network is the only way Prometheus reaches it; the metrics are read-only GPU telemetry
        "command": ["gpuwise", "exporter", "--bind", "0.0.0.0", "--port", str(EXPORTER_PORT), "--no-auth"],
        "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT}],
        # the sidecar holds no GPU of its own: this asks the NVIDIA runtime to show it the node's GPUs
        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }


def _trainer(target: Target, job: Job, argv: list[str], env: list[yamltext.Node]) -> Doc:
    sync = ["--sync", job.sync_url] if job.sync_url else []
    return {
        "name": "train",
        "image": job.image,
        "command": ["gpuwise", "run", "--resume", *sync, "--", *argv],
        "env": env,
        "resources": {"limits": {"nvidia.com/gpu": target.gpus_per_node}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _pod_template(target: Target, job: Job, argv: list[str], env: list[yamltext.Node]) -> Doc:
    spec: Doc = {
        "restartPolicy": "Never",
        **_node_placement(target),
        "initContainers": [_exporter_sidecar(job)],
        "containers": [_trainer(target, job, argv, env)],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(EXPORTER_PORT),
        "prometheus.io/path": "/metrics",
    }
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": job.name}, "annotations": annotations},
        "spec": spec,
    }


def k8s_manifest(target: Target, job: Job) -> Doc:
    """A batch/v1 Job (one node) or a JobSet (several), as a mapping."""
    _check_vendor(target)
    labels = {"app.kubernetes.io/name": job.name, "app.kubernetes.io/managed-by": "gpuwise"}
    if target.nodes == 1:
        argv = torchrun_argv(target, job, node_rank="0", master_addr="127.0.0.1")
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job.name, "labels": labels},
            "spec": {"backoffLimit": 0, "template": _pod_template(target, job, argv, [])},
        }
    master = f"{job.name}-{_REPLICATED_JOB}-0-0.{job.name}"
    argv = torchrun_argv(target, job, node_rank="$(NODE_RANK)", master_addr=master)
    rank: Doc = {
        "name": "NODE_RANK",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
        },
    }
    job_spec: Doc = {
        "parallelism": target.nodes,
        "completions": target.nodes,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": _pod_template(target, job, argv, [rank]),
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": job.name, "labels": labels},
        "spec": {
            # any failed pod restarts the whole set once: torchrun's static rendezvous needs every rank back
            "failurePolicy": {"maxRestarts": 3},
            "replicatedJobs": [{"name": _REPLICATED_JOB, "replicas": 1, "template": {"spec": job_spec}}],
        },
    }


def render_k8s(target: Target, job: Job) -> str:
    header = [
        f"gpuwise export k8s: {target.nodes} node(s) x {target.gpus_per_node} {target.gpu} ({target.source})",
        "Apply: kubectl apply -f THIS.yaml"
        + ("  (needs the JobSet controller: https://jobset.sigs.k8s.io)" if target.nodes > 1 else ""),
    ]
    if job.placeholder_image:
        header.append(
            f"Image {job.image} is a placeholder that no registry serves: build one "
            "(gpuwise export dockerfile), push it, and export again with --image."
        )
    if not gfd_products(target.gpu):
        header.append(
            f"No nvidia.com/gpu.product value is known for {target.gpu}: add a nodeSelector by hand."
        )
    return yamltext.dump(k8s_manifest(target, job), header=header)
