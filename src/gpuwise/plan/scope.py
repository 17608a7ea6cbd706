"""The constraints and settings as the planner checks them: fast lookups built once per plan, and the
checks that need no estimate (per offer, then per node count), in `models.REASONS` order.

A plain class with __slots__: a dataclass would cost about 1 ms at import, on every command.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from gpuwise.catalog.models import Offer
from gpuwise.plan import runnable as run_rules
from gpuwise.plan.models import Constraints, Settings


class Scope:
    """The constraints and settings in the shape the per-offer and per-node checks read."""

    __slots__ = (
        "commitment",
        "constraints",
        "counts_asked",
        "gpus_allowed",
        "max_nodes",
        "pricings",
        "providers",
        "region_patterns",
    )

    def __init__(
        self,
        *,
        constraints: Constraints,
        providers: frozenset[str] | None,
        region_patterns: tuple[str, ...] | None,
        gpus_allowed: frozenset[str] | None,
        counts_asked: dict[str, set[int | None]] | None,
        pricings: frozenset[str] | None,
        max_nodes: int,
        commitment: float | None,
    ) -> None:
        self.constraints = constraints
        self.providers = providers
        self.region_patterns = region_patterns  # lower case: regions are compared case-blind
        self.gpus_allowed = gpus_allowed
        self.counts_asked = counts_asked  # GPU -> total counts asked for (None: any)
        self.pricings = pricings
        self.max_nodes = max_nodes
        self.commitment = commitment  # months of a reservation, when reserved prices are asked for

    @classmethod
    def of(cls, constraints: Constraints, settings: Settings) -> Scope:
        counts_asked: dict[str, set[int | None]] | None = None
        if constraints.gpu_counts is not None:
            counts_asked = {}
            for name, n in constraints.gpu_counts:
                counts_asked.setdefault(name, set()).add(n)
        commitment = settings.commitment_months
        if commitment is None and settings.utilization is not None:
            commitment = 12.0  # the only term with published rates (AWS 1-year)
        return cls(
            constraints=constraints,
            providers=None if constraints.providers is None else frozenset(constraints.providers),
            # providers spell regions "us-east-1", "eastus", "FIN-03"
            region_patterns=None
            if constraints.regions is None
            else tuple(p.lower() for p in constraints.regions),
            gpus_allowed=None if constraints.gpus is None else frozenset(constraints.gpus),
            counts_asked=counts_asked,
            pricings=None if constraints.pricings is None else frozenset(constraints.pricings),
            max_nodes=1 if settings.single_gpu_only else max(1, constraints.max_nodes),
            commitment=commitment,
        )

    def offer_fails(self, offer: Offer, fx: dict[str, float]) -> tuple[list[str], float]:
        """What rules the offer out whatever its node count and pricing, and its USD exchange rate."""
        fails: list[str] = []
        rate_to_usd = 1.0
        if offer.currency != "USD":
            if offer.currency in fx:
                rate_to_usd = fx[offer.currency]
            else:
                fails.append("currency")
        if self.providers is not None and offer.provider not in self.providers:
            fails.append("provider")
        if self.region_patterns is not None and not any(
            fnmatchcase(offer.region.lower(), p) for p in self.region_patterns
        ):
            fails.append("region")
        if self.gpus_allowed is not None and offer.gpu not in self.gpus_allowed:
            fails.append("gpu")
        if self.counts_asked is not None and offer.gpu not in self.counts_asked and "gpu" not in fails:
            fails.append("gpu")
        per_node = offer.gpus
        if per_node < 1 or per_node != int(per_node):
            fails.append("fractional_gpu")
        return fails, rate_to_usd

    def node_fails(
        self, offer_fails: list[str], offer: Offer, nodes: int, fabric: run_rules.Fabric | None, single: bool
    ) -> list[str]:
        """`offer_fails` and what rules out `nodes` nodes of the offer."""
        fails = list(offer_fails)
        total_gpus = offer.gpus * nodes
        wanted = None if self.counts_asked is None else self.counts_asked.get(offer.gpu)
        if wanted is not None and None not in wanted and total_gpus not in wanted:
            fails.append("gpu_count")
        if single and total_gpus != 1:
            fails.append("not_single_gpu")
        max_gpus = self.constraints.max_gpus
        if max_gpus is not None and total_gpus > max_gpus:
            fails.append("max_gpus")
        if nodes > 1 and fabric is None:
            fails.append("no_fabric")
        return fails
