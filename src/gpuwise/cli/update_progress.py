"""`catalog update`'s progress on stderr: a rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from gpuwise.locale import _

if TYPE_CHECKING:
    from rich.console import Console

    from gpuwise.catalog.download import UpdateEvent


class UpdateProgress:
    """What `catalog update` is doing, on stderr: a rich progress bar (files done, and a bar per file
    while it downloads) when stderr is a terminal, else one plain line per file, retry and fallback.
    Called from the download threads, so every print is under one lock."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = bool(console.is_terminal)
        self.lock = threading.Lock()
        self.tasks: dict[str, Any] = {}  # request URL -> rich task (the URL itself is never shown)
        self.labels: dict[str, str] = {}
        self.files = 0
        self.bytes = 0
        self.progress: Any = None
        self.overall: Any = None

    def __enter__(self) -> UpdateProgress:
        if self.live:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                DownloadColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.overall = self.progress.add_task(_("catalog files"), total=None)
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.progress is not None:
            self.progress.stop()
        if exc_type is None:
            self.say(
                _("catalog update: {files} file(s), {bytes} bytes").format(
                    files=self.files, bytes=f"{self.bytes:,}"
                )
            )

    def say(self, line: str) -> None:
        with self.lock:
            self.console.print(line, markup=False, highlight=False)

    def __call__(self, event: UpdateEvent) -> None:
        kind = event.kind
        if kind == "start":
            self.labels[event.url] = event.label
            if self.progress is not None:
                self.tasks[event.url] = self.progress.add_task(event.label, total=None)
        elif kind == "progress" and self.progress is not None and event.url in self.tasks:
            self.progress.update(self.tasks[event.url], completed=event.done, total=event.total)
        elif kind == "plan":
            self.say(
                _("catalog update: schema {schema}, {clouds} clouds").format(
                    schema=event.detail, clouds=event.done
                )
            )
        elif kind == "retry":
            label = self.labels.get(event.url, event.label)
            self.say(_("catalog update: {label}: {detail}").format(label=label, detail=event.detail))
        elif kind == "fallback":
            self.say(
                _("catalog update: {label}: trying the fallback {url}").format(
                    label=event.label, url=event.detail
                )
            )
        elif kind in ("done", "missing"):
            self._finish(event)

    def _finish(self, event: UpdateEvent) -> None:
        task = self.tasks.pop(event.url, None)
        if task is not None:
            self.progress.remove_task(task)
        if event.kind == "done":
            with self.lock:
                self.files += 1
                self.bytes += event.done
            if self.progress is not None:
                self.progress.update(self.overall, completed=self.files)
            else:
                self.say(
                    _("catalog update: {label}: {bytes} bytes").format(
                        label=event.label, bytes=f"{event.done:,}"
                    )
                )
