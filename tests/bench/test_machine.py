"""The machine object's cloud part: the config's [machine] first, else the cloud's metadata service (a fake
AWS IMDSv2 on 127.0.0.1 here), else null."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpuwise.bench.machine import cloud_instance, cloud_part
from gpuwise.cli.main import main

AWS = {
    "/latest/meta-data/instance-id": "i-0abc123def4567890",
    "/latest/meta-data/placement/region": "us-east-2",
    "/latest/meta-data/instance-type": "p5.48xlarge",
}


class _Imds(BaseHTTPRequestHandler):
    """AWS's documented IMDSv2 flow: PUT a token, then GETs that carry it; everything else 404."""

    def _answer(self, status: int, body: str = "") -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_PUT(self) -> None:
        self._answer(200, "token-1") if self.path == "/latest/api/token" else self._answer(404)

    def do_GET(self) -> None:
        ok = self.headers.get("X-aws-ec2-metadata-token") == "token-1" and self.path in AWS
        self._answer(200, AWS[self.path]) if ok else self._answer(404)

    def log_message(self, *_args: object) -> None:
        return


@pytest.fixture
def imds() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Imds)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_instance_type_from_the_metadata_service(imds: str) -> None:
    assert cloud_instance(imds) == ("aws", "p5.48xlarge")
    assert cloud_instance("http://127.0.0.1:9") is None  # nobody answers: not a cloud


def test_config_wins_over_metadata_and_unknown_is_null() -> None:
    assert cloud_part(
        {"provider": "lambda", "instance_type": "gpu_1x_h100_sxm5"}, ("aws", "p5.48xlarge")
    ) == {
        "provider": "lambda",
        "instance_type": "gpu_1x_h100_sxm5",
        "price_usd_per_hour": None,
    }
    assert cloud_part({"price_usd_per_hour": 2.49}, None) == {
        "provider": None,
        "instance_type": None,
        "price_usd_per_hour": 2.49,
    }


def test_bench_task_records_the_cloud_instance(
    imds: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[machine]\nprice_usd_per_hour = 98.32\n", encoding="utf-8")
    argv = ["bench", "task", "--units", "1", "--json", "--config", str(config), "--metadata-url", imds]
    assert main([*argv, "--", sys.executable, "-c", "pass"]) == 0
    machine = json.loads(capsys.readouterr().out)["machine"]
    assert (machine["provider"], machine["instance_type"], machine["price_usd_per_hour"]) == (
        "aws",
        "p5.48xlarge",
        98.32,
    )


@pytest.mark.parametrize(
    ("driver_name", "canonical"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA GeForce RTX 4090", "RTX4090"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("Tesla T4", "T4"),
    ],
)
def test_the_gpu_is_named_as_its_driver_names_it(driver_name: str, canonical: str, tmp_path: Path) -> None:
    """bench named an A100-SXM4-80GB, an RTX 4090 or an H100 PCIe 'no GPU' (gpu: null) and measured them
    against no ceiling: the driver's product name was looked up as an alias without dropping its vendor,
    brand and form-factor words, so a `bench task` on the most rented GPU could not feed an estimate."""
    from types import SimpleNamespace

    from gpuwise.bench.machine import gpu_part
    from gpuwise.bench.prepare import make_context
    from gpuwise.gpu.sample import Sample, Snapshot

    snapshot = Snapshot(samples=(Sample(timestamp_s=0.0, index=0, name=driver_name),))
    assert gpu_part(snapshot)["gpu"] == canonical
    cuda = SimpleNamespace(device_count=lambda: 1, get_device_name=lambda _index: driver_name)
    context = make_context(SimpleNamespace(cuda=cuda), "quick", "cuda", tmp_path, None)
    assert context.gpu_spec is not None and context.gpu_spec.name == canonical
