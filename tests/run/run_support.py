"""Plain helpers the tests in tests/run import by name (fixtures stay in conftest.py). A module of its own:
`from conftest import …` took whichever conftest.py was imported last under that name (tests/init's, when
the suites ran in another order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Credentials for moto only; a test asserts they never reach gpuwise's output.
FAKE_KEY_ID = "AKIAGPUWISETESTKEY01"
FAKE_SECRET = "gpuwise-test-secret-do-not-print-0123456789"


@dataclass
class S3:
    endpoint: str
    bucket: str
    client: Any

    def url(self, prefix: str = "runs") -> str:
        return f"s3://{self.bucket}/{prefix}"

    def keys(self, prefix: str = "") -> list[str]:
        out: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)


@dataclass
class FakeMetadata:
    """Serves `routes[path] = (status, body)`; AWS paths need the IMDSv2 token from PUT /latest/api/token."""

    routes: dict[str, tuple[int, str]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    url: str = ""
    token: str = "tok-123"
    posts: list[tuple[float, str, bytes]] = field(default_factory=list)  # (time.time(), path, body)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
