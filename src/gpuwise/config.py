"""The one config file (CONTRACTS §9a): `[machine]`, `[idle]`, `[alerts]`, `[exporter]`.

Each capability validates its own section (with its own pydantic model); this module only finds
and reads the file and turns TOML syntax errors into a ConfigError that names the file and line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gpuwise import paths
from gpuwise.errors import ConfigError, close_matches

if TYPE_CHECKING:
    from pydantic import BaseModel

    M = TypeVar("M", bound=BaseModel)

KNOWN_SECTIONS = ("machine", "idle", "alerts", "exporter", "monitor")


@dataclass(frozen=True)
class Config:
    path: Path | None
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return dict(self.sections.get(name, {}))


def load_config(path: Path | None = None) -> Config:
    """Read ``path`` (or the default config file). A missing default file is an empty config;
    a missing file the user named is an error."""
    explicit = path is not None
    target = path if path is not None else paths.config_file()
    if not target.exists():
        if explicit:
            raise ConfigError(
                f"Config file {target} does not exist",
                fix=f"create it, or drop --config to use {paths.config_file()}",
            )
        return Config(path=None)
    try:
        data = tomllib.loads(target.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"Config file {target} is not valid TOML: {exc}",
            fix="correct the line named above (TOML syntax: key = value, [section])",
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"Config file {target} is not a text file: byte {exc.start} is not UTF-8",
            fix="give the TOML config file (a binary or non-UTF-8 file cannot be one)",
        ) from exc
    except OSError as exc:
        raise ConfigError(
            f"Cannot read config file {target}: {exc.strerror}", fix="check the path and its permissions"
        ) from exc
    unknown = [k for k in data if k not in KNOWN_SECTIONS]
    if unknown:
        hint = close_matches(unknown[0], KNOWN_SECTIONS)
        raise ConfigError(
            f"Config file {target}: unknown section [{unknown[0]}]"
            + (f". Did you mean [{hint[0]}]?" if hint else ""),
            fix="use only the sections " + ", ".join(f"[{s}]" for s in KNOWN_SECTIONS),
        )
    sections = {k: v for k, v in data.items() if isinstance(v, dict)}
    return Config(path=target, sections=sections)


def validate_section(data: Mapping[str, Any], name: str, model: type[M], *, source: str = "config.toml") -> M:
    """Validate one section with the pydantic model of the room that owns it. The first problem becomes a
    ConfigError naming the file, the key and, for a misspelt key, its closest known spelling."""
    from pydantic import ValidationError

    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        problem = first["msg"]
        if first["type"] == "extra_forbidden":
            hint = close_matches(str(first["loc"][-1]), model.model_fields)
            problem = "unknown key" + (f". Did you mean {hint[0]!r}?" if hint else "")
        raise ConfigError(
            f"{source}: {name}.{where}: {problem}",
            fix=f"correct or remove that key in the [{name}] section",
        ) from exc
