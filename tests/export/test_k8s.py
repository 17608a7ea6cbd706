"""`export k8s`: manifests that Kubernetes' OpenAPI schema accepts, with the exporter as a native sidecar."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from export_helpers import load_yaml

from gpuwise.errors import UsageError
from gpuwise.export.k8s import render_k8s
from gpuwise.export.target import Job, target_from_flags

JOB = Job(
    name="llama-ft", command=("train.py", "--epochs", "2"), sync_url="s3://bucket/ckpt", image="reg/img:1"
)


def _validate(doc: dict[str, Any]) -> None:
    """Strict validation (unknown fields are errors) against the newest Kubernetes schema the wheel ships."""
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    kubernetes_validate.validate(doc, latest_version(), strict=True)


def _as_job(jobset: dict[str, Any]) -> dict[str, Any]:
    """A JobSet's replicated Job as the batch/v1 Job it becomes (JobSet is a CRD: the schemas do not hold it,
    but its Job template is a batch/v1 JobTemplateSpec)."""
    template = jobset["spec"]["replicatedJobs"][0]["template"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, "spec": template["spec"]}


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]["replicatedJobs"][0]["template"]["spec"] if doc["kind"] == "JobSet" else doc["spec"]
    pod: dict[str, Any] = spec["template"]
    return pod


@pytest.fixture
def validator(need_module: Callable[[str], None]) -> Callable[[dict[str, Any]], None]:
    need_module("kubernetes_validate")
    return _validate


def test_one_node_is_a_job_the_schema_accepts(validator: Callable[[dict[str, Any]], None]) -> None:
    doc = load_yaml(render_k8s(target_from_flags("H100:8"), JOB))
    assert (doc["apiVersion"], doc["kind"]) == ("batch/v1", "Job")
    validator(doc)
    pod = _pod(doc)
    train = pod["spec"]["containers"][0]
    assert train["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert train["command"][:6] == ["gpuwise", "run", "--resume", "--sync", "s3://bucket/ckpt", "--"]
    assert train["command"][6:] == [
        "torchrun",
        "--nnodes=1",
        "--nproc-per-node=8",
        "--standalone",
        *JOB.command,
    ]
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    shm = {v["name"]: v for v in pod["spec"]["volumes"]}[train["volumeMounts"][0]["name"]]
    assert train["volumeMounts"][0]["mountPath"] == "/dev/shm"
    assert shm["emptyDir"] == {"medium": "Memory"}


def test_the_exporter_is_a_native_sidecar_scraped_by_prometheus(
    validator: Callable[[dict[str, Any]], None],
) -> None:
    """A sidecar in `containers` would keep the pod, and so the Job, running after training ends; an init
    container with restartPolicy Always (Kubernetes 1.29+) runs beside it and lets the Job complete."""
    doc = load_yaml(render_k8s(target_from_flags("L4:1"), JOB))
    pod = _pod(doc)
    (sidecar,) = pod["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["command"][:2] == ["gpuwise", "exporter"]
    assert [c["name"] for c in pod["spec"]["containers"]] == ["train"]
    port = sidecar["ports"][0]["containerPort"]
    assert pod["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port),
        "prometheus.io/path": "/metrics",
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    validator(doc)


def test_several_nodes_are_a_jobset_of_one_indexed_job(validator: Callable[[dict[str, Any]], None]) -> None:
    doc = load_yaml(render_k8s(target_from_flags("A100-80GB:16", nodes=2), JOB))
    assert (doc["apiVersion"], doc["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    replicated = doc["spec"]["replicatedJobs"]
    assert len(replicated) == 1 and replicated[0]["replicas"] == 1
    job = replicated[0]["template"]["spec"]
    assert (job["parallelism"], job["completions"], job["completionMode"]) == (2, 2, "Indexed")
    validator(_as_job(doc))
    pod = _pod(doc)
    train = pod["spec"]["containers"][0]
    assert "--node-rank=$(NODE_RANK)" in train["command"]
    # pod 0 of the JobSet's headless service: <jobset>-<replicated job>-<job index>-<pod index>.<jobset>
    assert f"--rdzv-endpoint=llama-ft-{replicated[0]['name']}-0-0.llama-ft:29500" in train["command"]
    (rank,) = train["env"]
    assert rank["name"] == "NODE_RANK"
    assert "job-completion-index" in rank["valueFrom"]["fieldRef"]["fieldPath"]
    # A100-80GB nodes carry one of two product names (SXM4 or PCIe): node affinity takes both
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expr = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expr["key"] == "nvidia.com/gpu.product" and expr["operator"] == "In"
    assert "NVIDIA-A100-SXM4-80GB" in expr["values"]


def test_the_validation_rejects_a_broken_manifest(validator: Callable[[dict[str, Any]], None]) -> None:
    """The schema check can fail: a misspelt field and a wrong type are both refused."""
    import kubernetes_validate

    doc = load_yaml(render_k8s(target_from_flags("H100:8"), JOB))
    for path, value in [(("spec", "backofLimit"), 0), (("spec", "backoffLimit"), "none")]:
        bad = copy.deepcopy(doc)
        bad[path[0]][path[1]] = value
        with pytest.raises(kubernetes_validate.ValidationError):
            validator(bad)


def test_an_amd_gpu_is_refused_with_the_fix() -> None:
    with pytest.raises(UsageError) as err:
        render_k8s(target_from_flags("MI300X:8"), JOB)
    assert "AMD" in err.value.message and err.value.fix
