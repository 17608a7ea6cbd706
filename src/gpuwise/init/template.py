"""Write the project template into a folder, never touching a file that is already there.

The template files live in data/ as `<name>.tmpl` (so neither ruff nor mypy takes train.py for part of
gpuwise); `{{name}}` and `{{gpuwise_version}}` are filled in. Each file is written whole under a
temporary name, then hard-linked to its final name: link() fails when the name exists, so a file that
appears between the check and the write (an editor, a second `gpuwise init`) is kept, not replaced.
Filesystems without hard links get a rename after a last check instead.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpuwise import __version__
from gpuwise.errors import ConfigError, UsageError
from gpuwise.locale import _

# written name -> template file in data/
FILES: dict[str, str] = {
    "train.py": "train.py.tmpl",
    "workload.toml": "workload.toml.tmpl",
    "Dockerfile": "Dockerfile.tmpl",
    "skypilot.yaml": "skypilot.yaml.tmpl",
    "README.md": "README.md.tmpl",
    ".dockerignore": "dockerignore.tmpl",
}
# Valid as a Docker image name, a SkyPilot task and cluster name and a Kubernetes (DNS-1123) label at once.
_NAME = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
_DEFAULT_NAME = "gpu-project"
DEFAULT_NAME = _DEFAULT_NAME  # what a folder name with no usable letters gives (`123`, `项目`)


class DirectoryNotEmptyError(UsageError):
    """`gpuwise init DIR` on a folder that already holds something, without --force."""


@dataclass
class InitResult:
    directory: Path
    name: str
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # already there: left as they were


def name_from(directory: Path) -> str:
    """A valid project name made from the folder's name ("My Model_v2" -> "my-model-v2")."""
    words = re.sub(r"[^a-z0-9]+", "-", directory.resolve().name.lower())
    words = words.lstrip("-0123456789")[:63].rstrip("-")
    return words if _NAME.fullmatch(words) else _DEFAULT_NAME


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            _("--name {name} is not a valid project name").format(name=repr(name)),
            why=_(
                "it names the Docker image and the SkyPilot task, which take lowercase letters, digits and "
                "'-' only, starting with a letter, at most 63 characters"
            ),
            fix=_("pass --name {name}").format(name=name_from(Path(name or _DEFAULT_NAME))),
        )
    return name


def render(template: str, name: str) -> str:
    text = resources.files("gpuwise.init").joinpath("data", template).read_text(encoding="utf-8")
    return text.replace("{{name}}", name).replace("{{gpuwise_version}}", __version__)


def _check_directory(directory: Path, force: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise UsageError(
            _("{directory} is not a directory").format(directory=directory),
            why=_("gpuwise init writes a project's files into a folder"),
            fix=_("give the path of a new or empty folder"),
        )
    if not force and directory.is_dir() and any(directory.iterdir()):
        raise DirectoryNotEmptyError(
            _("{directory} is not empty").format(directory=directory),
            why=_("a new project is not mixed into existing files unless you ask for it"),
            fix=_("choose an empty directory or pass --force (existing files are kept, never overwritten)"),
        )


def _create(target: Path, text: str, *, link: Callable[[str, Path], None] = os.link) -> bool:
    """Write `target` whole if no file of that name exists; False when one does (it is left alone).
    `link` is os.link (tests give one that fails as it does where a filesystem has no hard links)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~umask)  # what a plain open() would give, not mkstemp's 0600
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            link(tmp, target)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(target):  # no hard links here (some FUSE and SMB mounts): check, then rename
                return False
            Path(tmp).replace(target)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_project(directory: Path, *, name: str | None = None, force: bool = False) -> InitResult:
    """Write the template into `directory` (created if missing). Raises DirectoryNotEmptyError for a
    non-empty folder unless `force`; with `force`, every file already there is kept and listed in `kept`.
    Raises OSError when a file cannot be written (the files written before it stay, each whole)."""
    project = check_name(name) if name is not None else name_from(directory)
    _check_directory(directory, force)
    # every template read before the first write: a broken installation fails with nothing written
    texts = {written: render(template, project) for written, template in FILES.items()}
    directory.mkdir(parents=True, exist_ok=True)
    result = InitResult(directory, project)
    for written, text in texts.items():
        target = directory / written
        if os.path.lexists(target) or not _create(target, text):
            result.kept.append(written)
        else:
            result.written.append(written)
    return result
