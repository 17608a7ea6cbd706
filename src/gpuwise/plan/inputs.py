"""From a parsed workload to the planner's inputs: constraints, data needs, the smoke test, an estimator.

Pure functions over the workload object (read by attribute, so this module does not import pydantic or
the workload package at import time). `make_estimator` wraps `gpuwise.estimate.estimate` for the planner's
(gpu, count, nodes) calls; it imports the estimator lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpuwise.locale import _
from gpuwise.plan.models import Constraints, DataNeeds

if TYPE_CHECKING:
    from gpuwise.catalog.models import Offer
    from gpuwise.estimate.models import Estimate
    from gpuwise.plan.interruption import InterruptionRate
    from gpuwise.plan.runnable import DtypeNeeds, Verdict

GB = 1e9

SMOKE_STEPS = 200  # optimizer steps of the prototype smoke test
SMOKE_REQUESTS = 200  # requests of an inference smoke test


def constraints_from(workload: Any, *, canonical_gpu: Callable[[str], str] | None = None) -> Constraints:
    """The workload's `[constraints]`, with GPU names made canonical (aliases accepted)."""
    c = workload.constraints
    gpus = None
    if c.gpus is not None:
        gpus = tuple(canonical_gpu(g) if canonical_gpu else g for g in c.gpus)
    return Constraints(
        deadline_hours=c.deadline_hours,
        budget_usd=c.budget_usd,
        interruptible=c.interruptible,
        providers=None if c.providers is None else tuple(p.lower() for p in c.providers),
        regions=None if c.regions is None else tuple(c.regions),
        gpus=gpus,
        max_gpus=c.max_gpus,
        max_nodes=c.max_nodes,
        max_latency_s=getattr(c, "max_latency_s", None),
        max_ttft_s=getattr(c, "max_ttft_s", None),
    )


def service_hours_from(workload: Any) -> float | None:
    """Serving at a target rate for `duration_hours`: the hours within which the traffic must be served."""
    inf = workload.inference
    if inf is None or inf.target_output_tokens_per_s is None:
        return None
    return float(inf.duration_hours) if inf.duration_hours is not None else None


def data_needs_from(workload: Any, *, smoke: bool = False) -> DataNeeds:
    """What the run stores (dataset, checkpoints) and sends out, with the assumptions behind the sizes."""
    from gpuwise.estimate.checkpoint import checkpoint_size  # one home: the estimator's own tables

    data = workload.data
    size = checkpoint_size(workload)
    ckpt_gb, kept = size.bytes / GB, size.kept
    notes: list[str] = [size.description]
    egress = 0.0 if smoke else data.egress_gb
    notes.append(
        _("storage for the run's duration: dataset {dataset} GB + checkpoints; egress {egress} GB").format(
            dataset=f"{data.dataset_gb:g}", egress=f"{egress:g}"
        )
    )
    return DataNeeds(
        dataset_gb=data.dataset_gb,
        checkpoint_gb=ckpt_gb,
        checkpoints_kept=kept,
        checkpoint_every_hours=data.checkpoint_every_hours,
        egress_gb=egress,
        assumptions=tuple(notes),
    )


def smoke_workload(workload: Any) -> tuple[Any, str]:
    """The prototype smoke test of the workload (see SMOKE_*), and its one-line definition."""
    if workload.measured is not None:  # rerun the measured task package: the baseline test on a new machine
        spec = workload.measured
        m = spec.measurement
        units = float(m.units) if m is not None and m.units else min(float(spec.units), 1.0)
        smoke = workload.model_copy(update={"measured": spec.model_copy(update={"units": units})})
        return smoke, _(
            "smoke test = the measured task package once more ({units} {unit}), "
            "so the new machine's speed is known before the whole job"
        ).format(units=f"{units:g}", unit=spec.unit or "units")
    if workload.train is not None:
        train = workload.train
        update: dict[str, Any] = {"micro_batch": 1, "global_batch": None, "epochs": 1}
        if train.tokens is not None:
            update["tokens"] = float(SMOKE_STEPS * (train.seq_len or 1))
        else:
            update["samples"] = float(SMOKE_STEPS)
        # parallelism a single GPU cannot have
        update.update({"tensor_parallel": 1, "pipeline_parallel": 1})
        definition = _(
            "smoke test = {steps} steps at micro batch 1 and the workload's sequence length "
            "(validates training, evaluation, saving and loading end to end before scaling up)"
        ).format(steps=SMOKE_STEPS)
        return workload.model_copy(update={"train": train.model_copy(update=update)}), definition
    inf = workload.inference
    update = {
        "concurrency": 1,
        "requests": float(SMOKE_REQUESTS),
        "target_output_tokens_per_s": None,
        "duration_hours": None,
        "tensor_parallel": 1,
    }
    return workload.model_copy(update={"inference": inf.model_copy(update=update)}), _(
        "smoke test = {requests} requests at concurrency 1 with the workload's prompt and output lengths"
    ).format(requests=SMOKE_REQUESTS)


class PlanEstimator:
    """(gpu, count, nodes) -> Estimate, or None when it cannot be estimated; `why[gpu]` says why not."""

    def __init__(self, workload: Any, calibration: Any = None) -> None:
        self.workload = workload
        self.calibration = calibration
        self.why: dict[str, str] = {}

    def __call__(
        self, gpu: str, count: int, nodes: int, network_gbps: float | None = None
    ) -> Estimate | None:
        from gpuwise.catalog.specs import canonical_gpu_name, no_estimate_reason, resolve_gpu
        from gpuwise.errors import GpuwiseError
        from gpuwise.estimate import estimate

        if canonical_gpu_name(gpu) is None:
            why = no_estimate_reason(gpu) or _(
                "{gpu} is not in gpuwise's GPU spec table (`gpuwise catalog gpus`)"
            ).format(gpu=gpu)
            self.why.setdefault(gpu, why)
            return None
        try:
            return estimate(
                self.workload,
                resolve_gpu(gpu),
                count,
                nodes=nodes,
                calibration=self.calibration,
                network_gbps=network_gbps,
            )
        except GpuwiseError as exc:
            # A configuration the estimator cannot model (e.g. no figure for the dtype on that GPU) is
            # rejected as `no_estimate` rather than stopping the whole plan; the reason is kept.
            self.why.setdefault(gpu, exc.message)
            return None


def network_gbps(provider: str, instance_type: str) -> float | None:
    """One node's network bandwidth from the catalog's instance table, where it is known."""
    from gpuwise.catalog.specs import instance_network_gbps

    found = instance_network_gbps(provider, instance_type)
    return None if found is None else found[0]


def make_estimator(workload: Any, calibration: Any = None) -> PlanEstimator:
    """(gpu, count, nodes) -> Estimate, or None when the GPU is not in the spec table."""
    return PlanEstimator(workload, calibration)


def aws_spot_advisor_lookup(offer: Offer) -> InterruptionRate | None:
    """The catalog's AWS Spot Advisor bucket for the offer as an hourly rate (None where AWS has none)."""
    from gpuwise.catalog.spot import interruption_rate
    from gpuwise.plan.interruption import InterruptionRate, rate_from_bucket, rate_from_monthly_share

    found = interruption_rate(offer.provider, offer.instance_type, offer.region)
    if found is None:
        return None
    per_hour = rate_from_bucket(found.bucket)
    if per_hour is None:  # a bucket spelt differently: use its edges
        high = found.high_pct if found.high_pct is not None else 30.0
        per_hour = rate_from_monthly_share((found.low_pct + high) / 200.0)
    return InterruptionRate(
        per_hour=per_hour,
        source=_(
            "AWS Spot Advisor: {bucket} of {instance} in {region} interrupted over the trailing month "
            "({source}, {as_of}) ≈ {rate} preemptions/h"
        ).format(
            bucket=found.bucket,
            instance=offer.instance_type,
            region=offer.region,
            source=found.source,
            as_of=found.as_of,
            rate=f"{per_hour:.2g}",
        ),
        assumed=False,
    )


def dtype_needs_from(workload: Any) -> DtypeNeeds:
    """What the workload asks of the GPU's number formats (see plan/runnable.py for the rule)."""
    from gpuwise.plan.runnable import DtypeNeeds

    train = workload.train
    if train is not None:
        asked_fa2 = "attention" in train.model_fields_set and train.attention == "flash"
        return DtypeNeeds(
            dtype=train.precision,
            training=True,
            pure_low_precision=bool(train.pure_low_precision),
            flash_attention_2=asked_fa2,
        )
    inf = workload.inference
    return DtypeNeeds(dtype=inf.weights_precision, kv_dtype=inf.kv_dtype, training=False)


def make_runnable(workload: Any) -> Callable[[str], Verdict]:
    """(canonical GPU) -> whether it runs the workload's dtype, from the GPU spec table."""
    from gpuwise.catalog.specs import load_gpu_specs
    from gpuwise.plan.runnable import gpu_formats, verdict

    if workload.measured is not None:  # it ran: which formats it uses is not known, so none is checked
        from gpuwise.plan.runnable import OK

        return lambda _gpu: OK
    needs = dtype_needs_from(workload)
    specs = load_gpu_specs()

    def call(gpu: str) -> Verdict:
        spec = specs.get(gpu)
        if spec is None:
            return verdict(needs, None)
        formats = gpu_formats(
            spec.name,
            spec.architecture,
            spec.compute_capability,
            spec.peak_tflops("bf16"),
            spec.peak_tflops("fp8"),
        )
        return verdict(needs, formats)

    return call


def transfers_from(workload: Any, data: DataNeeds) -> tuple[float, float, str]:
    """(model download GB, final upload GB, why) for the start-up cost part.

    A fine-tune or a server downloads its base model's weights (16-bit checkpoint: 2 bytes/param, as
    published on the Hugging Face Hub; 4 for fp32); a run from scratch downloads none. At the end the
    weights (full training), or the adapters (LoRA), and the workload's egress go out.
    """
    from gpuwise.estimate.constants import BYTES

    if workload.model is None:  # measured work: its inputs and outputs are not described
        return 0.0, data.egress_gb, _("measured task: no model download; upload = egress")
    params = float(workload.model.params or 0.0)
    train = workload.train
    if train is None:
        model_gb = params * BYTES[workload.inference.weights_precision] / GB
        return (
            model_gb,
            data.egress_gb,
            _("model download {gb} GB (weights); upload = egress").format(gb=f"{model_gb:,.1f}"),
        )
    base_bytes = 4.0 if train.precision == "fp32" else 2.0
    model_gb = params * base_bytes / GB if workload.task == "finetune" else 0.0
    if train.method in ("lora", "qlora"):
        final = data.checkpoint_gb / 3.0  # adapters only: 4 of the 12 bytes/param (not the AdamW moments)
    else:
        final = params * BYTES[train.precision] / GB
    upload = final + data.egress_gb
    why = _("model download {gb} GB ({what}); final upload {upload} GB (trained weights + egress)").format(
        gb=f"{model_gb:,.1f}",
        what=_("base weights") if model_gb else _("none: from scratch"),
        upload=f"{upload:,.2f}",
    )
    return model_gb, upload, why


def units_from(workload: Any) -> tuple[tuple[str, float], ...]:
    """The workload's natural units for per-unit costs: (label, how many of them the workload is)."""
    out: list[tuple[str, float]] = []
    if workload.measured is not None:
        unit = str(workload.measured.unit or "units")
        return ((f"per 1k {unit}", float(workload.measured.units) / 1000.0),)
    train = workload.train
    if train is not None:
        epochs = float(train.epochs)
        if train.tokens is not None:
            out.append(("per 1M tokens", float(train.tokens) * epochs / 1e6))
            if epochs > 1:
                out.append(("per epoch", epochs))
            return tuple(out)
        samples = float(train.samples) * epochs
        unit = str(workload.model.sample_unit or "sample")
        out.append(("per epoch", epochs))
        if unit in ("audio hour", "audio hours", "audio_hour"):
            out.append(("per audio hour", samples))
        else:
            plural = unit if unit.endswith("s") else f"{unit}s"
            out.append((f"per 1k {plural}", samples / 1000.0))
        return tuple(out)
    inf = workload.inference
    if getattr(inf, "audio_hours", None) is not None:  # speech: per audio hour, and per 1M decoder tokens
        return (("per audio hour", float(inf.audio_hours)),)
    if inf.requests is not None:
        requests = float(inf.requests)
    else:
        per_request = float(inf.output_tokens)
        requests = float(inf.target_output_tokens_per_s) * float(inf.duration_hours) * 3600.0 / per_request
    out.append(("per 1M output tokens", requests * float(inf.output_tokens) / 1e6))
    out.append(("per 1k requests", requests / 1000.0))
    return tuple(out)
