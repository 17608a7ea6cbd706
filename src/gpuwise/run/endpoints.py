"""Which fsspec filesystem a storage URL opens, with which endpoint and credentials.

* `file://` (a mounted volume), `gs://` (gcsfs): as fsspec opens them.
* `s3://`: s3fs; `--endpoint-url` (or `$AWS_ENDPOINT_URL_S3`, `$AWS_ENDPOINT_URL`) points it at MinIO, R2 or
  any S3-compatible store.
* `cos://BUCKET-APPID/prefix`: Tencent Cloud COS through its S3-compatible API (s3fs), endpoint
  `https://cos.<region>.myqcloud.com` ("Accessing COS with AWS S3 SDK", tencentcloud.com/document/product/
  436/32537). cosfs, an fsspec backend of its own, is not used: one release and no track record on PyPI in
  2026, where s3fs is maintained and already tested here.
* `oss://BUCKET/prefix`: Alibaba Cloud OSS through its S3-compatible API (s3fs), endpoint
  `https://s3.oss-<region>.aliyuncs.com` ("Use AWS SDKs to access OSS", help.aliyun.com/en/oss/
  developer-reference/use-aws-sdks-to-access-oss). Where s3fs is missing but ossfs is installed, ossfs and
  OSS's own API (`https://oss-<region>.aliyuncs.com`) instead, as before.

Both Chinese clouds address buckets virtual-hosted style (bucket name in the host name), and both are asked
for checksums only when an operation requires one: botocore 1.36 began sending CRC32 checksum headers on
every upload, which third-party S3 implementations rejected (boto/boto3#4392). Credentials come from the
provider's usual environment variables (COS: `COS_SECRET_ID`/`COS_SECRET_KEY` or `TENCENTCLOUD_SECRET_ID`/
`TENCENTCLOUD_SECRET_KEY`; OSS: `OSS_ACCESS_KEY_ID`/`OSS_ACCESS_KEY_SECRET` or `ALIBABA_CLOUD_ACCESS_KEY_ID`/
`ALIBABA_CLOUD_ACCESS_KEY_SECRET`), else from the AWS ones; they are passed to the client, never printed, and
`redact()` strips every one of them from messages.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuwise.errors import ConfigError
from gpuwise.locale import _

# botocore's own default read timeout; s3fs lowers it to 15 s, after which a busy endpoint (MinIO on a small
# box; moto in the benchmark) gets the same 64 MiB part, or the same multipart completion, sent again while
# it still works on the first: double the work just when it is short of time.
S3_READ_TIMEOUT_S = 60.0

SECRET_VARS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OSS_ACCESS_KEY_SECRET",
    "OSS_ACCESS_KEY_ID",
    "OSS_SESSION_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "COS_SECRET_ID",
    "COS_SECRET_KEY",
    "COS_SESSION_TOKEN",
    "TENCENTCLOUD_SECRET_ID",
    "TENCENTCLOUD_SECRET_KEY",
    "TENCENTCLOUD_SESSION_TOKEN",
)
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{1,40}$")


@dataclass(frozen=True)
class Provider:
    """An S3-compatible object store other than AWS reached through s3fs."""

    scheme: str
    name: str
    endpoint_pattern: str  # with {region}
    region_vars: tuple[str, ...]
    key_vars: tuple[tuple[str, str, str], ...]  # (key id, secret, session token) variable names, in order
    example_region: str
    extra: str


COS = Provider(
    "cos",
    "Tencent Cloud COS",
    "https://cos.{region}.myqcloud.com",
    ("COS_REGION", "TENCENTCLOUD_REGION"),
    (
        ("COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN"),
        ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"),
    ),
    "ap-guangzhou",
    "cos",
)
OSS = Provider(
    "oss",
    "Alibaba Cloud OSS",
    "https://s3.oss-{region}.aliyuncs.com",
    ("OSS_REGION", "ALIBABA_CLOUD_REGION_ID"),
    (
        ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"),
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN"),
    ),
    "cn-hangzhou",
    "oss",
)
PROVIDERS = {p.scheme: p for p in (COS, OSS)}
OSS_NATIVE = replace(OSS, endpoint_pattern="https://oss-{region}.aliyuncs.com")  # OSS's own API, for ossfs

_BACKENDS = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs")}
_SCHEMES_HELP = (
    "file://, s3:// (gpuwise[s3]), gs:// (gpuwise[gcs]), oss:// (gpuwise[oss]) or cos:// (gpuwise[cos])"
)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every credential value from the environment replaced by `***`."""
    source = os.environ if env is None else env
    for var in SECRET_VARS:
        value = source.get(var, "")
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


def credential_hint(url: str) -> str:
    """Where the credentials for `url` come from, for an "access denied" message (names, never values)."""
    provider = PROVIDERS.get(scheme_of(url))
    if provider is None:
        return _(
            "check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE (or the provider's equivalent)"
        )
    first, second = provider.key_vars
    return _("check {first} (or {second}) for {provider}").format(
        first=f"{first[0]}/{first[1]}", second=f"{second[0]}/{second[1]}", provider=provider.name
    )


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def _region(provider: Provider, region: str | None, env: Mapping[str, str]) -> str | None:
    value = region or next((env[v] for v in provider.region_vars if env.get(v)), None)
    if value is not None and not _REGION.match(value):
        raise ConfigError(
            _("--region {value} is not a {provider} region").format(
                value=repr(value), provider=provider.name
            ),
            fix=_("give the bucket's region id, such as {example}").format(example=provider.example_region),
        )
    return value


def provider_endpoint(
    provider: Provider, endpoint_url: str | None, region: str | None, env: Mapping[str, str]
) -> tuple[str, str | None]:
    """(endpoint URL, region or None) for `provider`: the given endpoint, else the one built from the
    region. ConfigError when neither is known."""
    chosen_region = _region(provider, region, env)
    if endpoint_url:
        endpoint = endpoint_url if "://" in endpoint_url else "https://" + endpoint_url
        return endpoint, chosen_region
    if chosen_region is None:
        example = provider.endpoint_pattern.format(region=provider.example_region)
        raise ConfigError(
            _("{scheme}:// needs the bucket's region or endpoint").format(scheme=provider.scheme),
            why=_("{provider} has one endpoint per region").format(provider=provider.name),
            fix=_("pass --region {region} (or --endpoint-url {example}), or set {variable}").format(
                region=provider.example_region, example=example, variable=provider.region_vars[0]
            ),
        )
    return provider.endpoint_pattern.format(region=chosen_region), chosen_region


def _credentials(provider: Provider, env: Mapping[str, str]) -> dict[str, str]:
    for key_var, secret_var, token_var in provider.key_vars:
        if env.get(key_var) and env.get(secret_var):
            out = {"key": env[key_var], "secret": env[secret_var]}
            if env.get(token_var):
                out["token"] = env[token_var]
            return out
    return {}  # botocore's own chain: AWS_* variables, profile, instance role


def s3_options(
    scheme: str, endpoint_url: str | None, region: str | None, env: Mapping[str, str]
) -> dict[str, Any]:
    """s3fs's keyword arguments for an `s3://`, `cos://` or `oss://` URL."""
    # botocore's default CRC32 header stays on for AWS: over HTTPS it is what spares each part a SHA-256
    # payload signature (botocore.auth.S3SigV4Auth._should_sha256_sign_payload), a far dearer pass.
    config: dict[str, Any] = {"read_timeout": S3_READ_TIMEOUT_S}
    options: dict[str, Any] = {"skip_instance_cache": True, "config_kwargs": config}
    provider = PROVIDERS.get(scheme)
    if provider is None:
        endpoint = endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if endpoint:
            options["endpoint_url"] = endpoint
        if region:
            options["client_kwargs"] = {"region_name": region}
        return options
    endpoint, chosen_region = provider_endpoint(provider, endpoint_url, region, env)
    options["endpoint_url"] = endpoint
    if chosen_region:
        options["client_kwargs"] = {"region_name": chosen_region}
    options.update(_credentials(provider, env))
    config["s3"] = {"addressing_style": "virtual"}
    if _botocore_sends_checksums():
        config["request_checksum_calculation"] = "when_required"
        config["response_checksum_validation"] = "when_required"
    return options


def _botocore_sends_checksums() -> bool:
    """Whether this botocore has the 1.36 checksum options (older ones send no default checksum and
    reject the option names)."""
    try:
        config_module = importlib.import_module("botocore.config")  # untyped; s3fs brings it
    except ImportError:
        return False
    return "request_checksum_calculation" in getattr(config_module.Config, "OPTION_DEFAULTS", {})


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def open_filesystem(
    url: str, endpoint_url: str | None = None, region: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[Any, str, str]:
    """(fsspec filesystem, root path inside it, protocol) for `url`. ConfigError for an unknown scheme, a
    missing region, or a backend that is not installed."""
    source = os.environ if env is None else env
    if "://" not in url:
        raise ConfigError(
            _("--sync {url} is not a URL").format(url=repr(url)),
            fix=_(
                "give a URL such as file:///mnt/volume/ckpt, s3://bucket/prefix or cos://bucket-appid/prefix"
            ),
        )
    scheme = scheme_of(url)
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec is a dependency of gpuwise
        raise ConfigError(_("--sync needs fsspec"), fix="pip install 'gpuwise[s3]'") from exc
    if scheme in PROVIDERS:
        provider = PROVIDERS[scheme]
        if not _has("s3fs"):
            if scheme == "oss" and _has("ossfs"):
                return _ossfs(url, endpoint_url, region, source)
            raise ConfigError(
                _("--sync {scheme}:// needs the s3fs package ({provider}'s S3-compatible API)").format(
                    scheme=scheme, provider=provider.name
                ),
                fix=f"pip install 'gpuwise[{provider.extra}]'",
            )
        fs = fsspec.filesystem("s3", **s3_options(scheme, endpoint_url, region, source))
        return fs, url.split("://", 1)[1].strip("/"), "s3"
    backend = _BACKENDS.get(scheme)
    if backend is not None and not _has(backend[0]):
        raise ConfigError(
            _("--sync {scheme}:// needs the {package} package").format(scheme=scheme, package=backend[0]),
            fix=f"pip install 'gpuwise[{backend[1]}]'",
        )
    options = s3_options(scheme, endpoint_url, region, source) if scheme in ("s3", "s3a") else {}
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except (ValueError, ImportError) as exc:
        raise ConfigError(
            _("--sync {scheme}:// is not a storage gpuwise can write: {error}").format(
                scheme=scheme, error=redact(str(exc), source)
            ),
            fix=_("use {schemes}").format(schemes=_SCHEMES_HELP),
        ) from exc
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return fs, str(root).rstrip("/"), protocol


def _ossfs(
    url: str, endpoint_url: str | None, region: str | None, env: Mapping[str, str]
) -> tuple[Any, str, str]:
    """OSS through ossfs and OSS's own API (where s3fs is not installed)."""
    import fsspec

    if endpoint_url or region or not env.get("OSS_ENDPOINT"):
        endpoint, _region = provider_endpoint(OSS_NATIVE, endpoint_url, region, env)
    else:
        endpoint = env["OSS_ENDPOINT"]  # ossfs's and Alibaba's tools' own variable for the native API
    options: dict[str, Any] = {"endpoint": endpoint, **_credentials(OSS, env)}
    options.pop("token", None)  # ossfs takes STS tokens through its own configuration
    fs, root = fsspec.core.url_to_fs(url, **options)
    return fs, str(root).rstrip("/"), "oss"
