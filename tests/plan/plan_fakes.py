"""Offers and a fake estimator built per scenario for the planner's tests (our own interfaces only)."""

from __future__ import annotations

from datetime import date

from gpuwise.catalog.models import Offer
from gpuwise.estimate.models import Estimate, MemoryBreakdown

GIB = 1024**3
TODAY = date(2026, 11, 30)

# name -> (memory GiB, relative speed)
GPUS: dict[str, tuple[float, float]] = {
    "H100": (79.6, 3.0),
    "A100-80GB": (79.3, 1.6),
    "A100": (39.4, 1.5),
    "L40S": (44.4, 1.2),
    "L4": (22.0, 0.4),
    "T4": (15.0, 0.15),
}


def offer(
    *,
    provider: str = "lambda",
    instance_type: str = "gpu_1x_h100",
    region: str = "us-east-1",
    gpu: str = "H100",
    gpus: float = 1,
    price: float | None = 2.5,
    spot: float | None = None,
    currency: str = "USD",
    as_of: date = date(2026, 10, 1),
    exact: bool = True,
    gpu_only_price: bool = False,
) -> Offer:
    return Offer(
        provider=provider,
        instance_type=instance_type,
        region=region,
        zone=None,
        gpu=gpu,
        gpus=gpus,
        gpu_memory_gib=GPUS.get(gpu, (80.0, 1.0))[0],
        vcpus=8,
        memory_gib=64,
        price_usd_per_hour=price,
        spot_price_usd_per_hour=spot,
        currency=currency,
        price_as_of=as_of,
        price_date_exact=exact,
        source=f"{provider}.csv (test)",
        gpu_only_price=gpu_only_price,
    )


class FakeEstimator:
    """Hours = work / (count × speed × scaling); memory need per GPU shrinks with count (sharded)."""

    def __init__(self, work_gpu_hours: float = 10.0, need_gib: float = 30.0) -> None:
        self.work = work_gpu_hours
        self.need = need_gib
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, gpu: str, count: int, nodes: int) -> Estimate | None:
        self.calls.append((gpu, count, nodes))
        spec = GPUS.get(gpu)
        if spec is None:
            return None
        capacity_gib, speed = spec
        need_gib = self.need / (count**0.5)
        scaling = 0.9 ** (count - 1) * (0.8 ** (nodes - 1))
        hours = self.work / (speed * count * scaling)
        return Estimate(
            gpu=gpu,
            count=count,
            nodes=nodes,
            fits=need_gib <= capacity_gib,
            memory=MemoryBreakdown(
                weights=need_gib * 0.5 * GIB,
                gradients=0.0,
                optimizer=0.0,
                activations=need_gib * 0.4 * GIB,
                kv_cache=0.0,
                overhead=need_gib * 0.1 * GIB,
            ),
            memory_capacity_bytes=capacity_gib * GIB,
            throughput_per_gpu=1000.0 * speed,
            throughput_unit="tokens/s",
            hours=hours,
            mfu=0.4,
            bottleneck="compute",
            assumptions=("fake estimate for tests",),
        )
