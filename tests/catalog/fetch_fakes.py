"""A recorded cloud API for `catalog fetch` tests: answers each call with the response file in
tests/fixtures/cn_clouds/<cloud>/ that names it (see PROVENANCE.md there), and records the calls.

It stands in for our own :class:`gpuwise.catalog.fetch.common.Api` interface, never for an SDK."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuwise.catalog.fetch.common import ApiError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cn_clouds"


class RecordedApi:
    def __init__(self, cloud: str, *, fail: Mapping[tuple[str, str | None], ApiError] | None = None) -> None:
        self.folder = FIXTURES / cloud
        self.fail = dict(fail or {})
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def call(self, action: str, region: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        self.calls.append((action, region, dict(params)))
        for key in ((action, region), (action, None)):
            if key in self.fail:
                raise self.fail[key]
        for name in self._names(action, region, params):
            path = self.folder / f"{name}.json"
            if path.is_file():
                doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
                return doc
        raise ApiError("InvalidParameter", f"no recording for {action} in {region}")

    @staticmethod
    def _names(action: str, region: str | None, params: Mapping[str, Any]) -> list[str]:
        """Most specific first: the instance type, the page token, the region and charge type, the region;
        the bare action last (never for a later page, which must not answer as the first). A later page of
        an offset-paged call (``Offset``) answers only from ``<Action>-<instance type>-offset<N>``."""
        if "Offset" in params:
            return [f"{action}-{params.get('InstanceType', region)}-offset{params['Offset']}"]
        keys: list[str] = []
        if "InstanceType" in params:
            keys.append(str(params["InstanceType"]))
        if "NextToken" in params:
            keys.append(str(params["NextToken"]))
        for flt in params.get("Filters", []):
            keys.extend(f"{region}-{v}" for v in flt["Values"])
        if region:
            keys.append(region)
        names = [f"{action}-{k}" for k in keys]
        if "NextToken" not in params:
            names.append(action)
        return names
