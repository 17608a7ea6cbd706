"""The idle daemon: every interval, read the GPUs and the signals, feed the policy, warn, run the pre-stop
hook, stop the machine — and persist its evidence so a restart never stops a busy machine.

Clock, sleep, probe, gatherers, command runner and metadata endpoints are injected; tests drive it with a
fake clock, a replayed recording, recording stub commands and a fake metadata server on loopback.

Failure rules:
* a probe that raises (NVML gone, driver reloading) gives an observation with an error: busy;
* a gatherer that raises gives an "unknown" signal: busy;
* the pre-stop hook's failure (non-zero exit or timeout) is logged and sent to the webhook; by default the
  stop goes ahead, because every stop action here (cloud stop/deallocate, shutdown) keeps the disks, and an
  idle machine held up by a broken sync script would bill forever. With `hook_blocks` — and always before
  Lambda's terminate, the one action that loses the disk — the stop is cancelled and the whole sequence is
  retried after `warn_min`;
* a stop call that fails is said loudly (log, wall, webhook `stop_failed`, every time), tried again
  `stop_attempts` times, then the next step of the plan (`gpuwise.idle.providers.plan`: the configured
  `fallback`, by default `shutdown -h now` in auto mode, with a warning wherever a shutdown is not known to
  end the billing); when every step failed, the whole plan is retried after `warn_min`.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwise.gpu.sample import Snapshot
from gpuwise.idle.actions import Runner, notice_text, post_webhook, wall
from gpuwise.idle.activity import activity_checks
from gpuwise.idle.hang import HangDetector, HangState, HangVerdict, last_user_activity
from gpuwise.idle.message import Msg, text
from gpuwise.idle.policy import Decision, IdlePolicy, IdleState, Observation, PolicyState
from gpuwise.idle.progress import WatchedPaths
from gpuwise.idle.providers.metadata import MetadataEndpoints
from gpuwise.idle.settings import IdleSettings
from gpuwise.idle.signals import Gatherer, gather_all, gatherers_for
from gpuwise.idle.state import load_state, save_state, state_path
from gpuwise.idle.stopping import StopNotices, stop_machine
from gpuwise.locale import N_
from gpuwise.webhook import redact_url

log = logging.getLogger("gpuwise.idle")


class RetryingProbe:
    """Opens the live probe lazily and again after it failed to open: a driver/library mismatch after an
    unattended upgrade must not kill the daemon (each failed read is an error observation: busy)."""

    def __init__(self, opener: Callable[[], Any]) -> None:
        self._opener = opener
        self._probe: Any = None

    def read(self) -> Snapshot:
        if self._probe is None:
            self._probe = self._opener()
        snapshot: Snapshot = self._probe.read()
        return snapshot

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()


def _system_boot_time() -> float | None:
    """When this machine booted (psutil), or None when unknown: proves a stop really took it down."""
    try:
        import psutil

        return float(psutil.boot_time())
    except Exception:  # psutil cannot read /proc/stat: unknown, so no savings are claimed
        return None


@dataclass
class IdleDaemon:
    settings: IdleSettings
    probe: Any  # has .read() -> Snapshot
    gatherers: Sequence[Gatherer]
    state_file: Path
    keepalive_hint: str = Msg(N_("touch the keep-alive file"))
    dry_run: bool = False
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    runner: Runner = field(default_factory=Runner)
    endpoints: MetadataEndpoints = field(default_factory=MetadataEndpoints)
    host: str = field(default_factory=socket.gethostname)
    history: Any = None  # a gpuwise.monitor.history.HistoryStore (live runs only), or None
    boot_time: Callable[[], float | None] = _system_boot_time
    # when a watched path last changed (None: from settings.watch_paths); hang detection needs it
    progress: Callable[[float], float | None] | None = None
    policy: IdlePolicy = field(init=False)
    hang: HangDetector | None = field(init=False, default=None)
    _hang_state: HangState = field(init=False, default="none")
    _data: dict[str, Any] = field(init=False, default_factory=dict)
    _prev_state: IdleState = field(init=False, default=IdleState.BUSY)
    _retry_at: float | None = field(init=False, default=None)
    _watched: WatchedPaths | None = field(init=False, default=None)
    _watch_problem: str | None = field(init=False, default=None)

    @staticmethod
    def inputs(settings: IdleSettings, data_dir: Path) -> list[Gatherer]:
        """The gatherers `settings.signals` names and the user's activity checks. This reads the files
        they need (the Jupyter token: ConfigError when it cannot be read), so `gpuwise idle run` calls it
        before it takes the daemon lock and a bad input leaves nothing behind in the data directory."""
        checks = activity_checks(
            settings.activity_command, settings.activity_url, settings.activity_timeout_s, settings.interval_s
        )
        return [*gatherers_for(settings, data_dir), *checks]

    @classmethod
    def on_this_machine(
        cls,
        settings: IdleSettings,
        probe: Any,
        data_dir: Path,
        gatherers: Sequence[Gatherer] | None = None,
        **options: Any,
    ) -> IdleDaemon:
        """The daemon `gpuwise idle run` starts: `gatherers` (default: `inputs`), its state file under
        `data_dir`, and a warning that says how to keep the machine. `options` are the remaining fields
        (dry_run, endpoints, history)."""
        keepalive = settings.keepalive_path(data_dir)
        return cls(
            settings,
            probe,
            list(gatherers) if gatherers is not None else cls.inputs(settings, data_dir),
            state_path(data_dir),
            keepalive_hint=Msg(N_("touch {path}"), path=str(keepalive))
            if "keepalive" in settings.signals
            else Msg(N_("log in and use a GPU")),
            **options,
        )

    def __post_init__(self) -> None:
        # a daemon killed while saving leaves its temp file beside the state; only the daemon writes there
        try:
            for stale in self.state_file.parent.glob(f".{self.state_file.name}.*.tmp"):
                stale.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove a stale temp file beside %s: %s", self.state_file, exc)
        data = load_state(self.state_file) or {}
        restored: PolicyState | None = None
        if isinstance(data.get("policy"), dict):
            try:
                restored = PolicyState.from_json(data["policy"])
            except (ValueError, TypeError, KeyError):
                log.warning(
                    "idle state file %s holds unreadable evidence: the idle clock starts over",
                    self.state_file,
                )
        if restored is not None and restored.last_ts is not None:
            log.info(
                "resuming from persisted evidence: last activity %s (%s)",
                _ago(self.clock(), restored.last_activity_s),
                restored.last_activity_cause,
            )
        self.policy = IdlePolicy(self.settings.policy.resolve_gap(self.settings.interval_s), restored)
        if self.settings.watch_paths or self.progress is not None:
            pol = self.policy.config
            self.hang = HangDetector(
                self.settings.hang, pol.threshold_pct, pol.mem_change_mib, pol.gap_limit_s, pol.warn_s
            )
            if self.progress is None:
                self._watched = WatchedPaths(self.settings.watch_paths)
                self.progress = self._watched.last_change
            self._restore_hang(data.get("hang"))
        self._data = {
            "stops": list(data.get("stops", []))[-200:],
            "boots": [
                *list(data.get("boots", []))[-200:],
                {"daemon_start": self.clock(), "system_boot": self.boot_time()},
            ],
        }

    def _restore_hang(self, saved: object) -> None:
        """Continue the hang detector's flat stretch (see `HangDetector.restore` for when it still applies),
        so a restart in the middle of a hang does not push its stop back by a whole window."""
        if self.hang is None or not isinstance(saved, dict):
            return  # a state file from before the hang clock was saved: it starts over, as before
        try:
            self.hang.restore(saved)
        except (ValueError, TypeError, OverflowError):
            log.warning(
                "idle state file %s holds unreadable hang evidence: the hang clock starts over",
                self.state_file,
            )

    # -- one observation
    def step(self) -> Decision:
        now = self.clock()
        try:
            snapshot = self.probe.read()
        except Exception as exc:
            log.warning("GPU read failed (counts as busy): %s", exc)
            snapshot = Snapshot(samples=(), errors=(f"{type(exc).__name__}: {exc}",))
        self._history(snapshot, now)
        signals = gather_all(self.gatherers, now, snapshot)
        obs = Observation.from_snapshot(now, snapshot, signals)
        decision = self.policy.observe(obs)
        self._transition(decision)
        verdict = self._hang_step(obs)
        if decision.state == IdleState.STOPPING:
            self._stop(decision)
        elif verdict is not None and verdict.state == "stopping":
            window_s = self.settings.hang.window_min * 60
            since = verdict.since_s if verdict.since_s is not None else now
            self._stop(Decision(now, IdleState.STOPPING, verdict.reason, now - since, window_s, now))
            if self.dry_run and self.hang is not None:
                self.hang.reset()  # as the policy's clock after a dry-run stop: no flood of stops
                self._hang_state = "none"  # and no "hang over" notice for a hang nobody ended
        self._prev_state = decision.state
        self._persist(decision)
        return decision

    def run(self, max_steps: int | None = None) -> None:
        """Loop until interrupted (or `max_steps` observations, for tests)."""
        log.info(
            "gpuwise idle %s: %s; every %g s",
            "dry run" if self.dry_run else "running",
            self.settings.policy.describe(),
            self.settings.interval_s,
        )
        steps = 0
        while max_steps is None or steps < max_steps:
            started = self.clock()
            d = self.step()
            log.debug("%s", d.reason)
            steps += 1
            if max_steps is not None and steps >= max_steps:
                break
            self.sleep(max(0.0, self.settings.interval_s - (self.clock() - started)))

    # -- monitor history (docs/config.md: `idle run` writes it too)
    def _history(self, snapshot: Snapshot, now: float) -> None:
        if self.history is None:
            return
        try:
            self.history.add_snapshot(snapshot)
            self.history.prune(now)
        except Exception as exc:  # history is a convenience; never let it stop the daemon
            log.error("monitor history disabled: %s", exc)
            self.history = None

    def _event(self, d: Decision, event: str) -> None:
        if self.history is None:
            return
        try:
            self.history.add_event(d.timestamp_s, "idle", None, f"idle.{event}", d.state.value, d.reason)
        except Exception as exc:  # history is a convenience, as above
            log.error("monitor history disabled: %s", exc)
            self.history = None

    # -- notices
    def _notify(self, event: str, decision: Decision, **extra: Any) -> None:
        url = self.settings.webhook
        if not url:
            return
        payload = {
            "event": event,
            "host": self.host,
            "reason": str(decision.reason),  # English, as in the log; `text` is for people
            "idle_min": round(decision.idle_s / 60, 1),
            "stop_due_unix": decision.stop_due_s,
            "dry_run": self.dry_run,
            **extra,
        }
        if "text" not in payload:  # the chat line, in the daemon's language
            payload["text"] = notice_text({**payload, "reason": text(decision.reason)})
        error = post_webhook(url, payload, sleep=self.sleep)
        if error:
            log.warning("%s", error)
        else:
            log.info("webhook %s: sent %s", redact_url(url), event)

    def _wall(self, message: str) -> None:
        """Tell logged-in users, in their language (a `Msg` is rendered; the log stays English)."""
        if self.dry_run:
            log.info("dry run: would wall: %s", message)
            return
        res = wall(text(message), self.runner)
        if not res.ok:
            log.warning("wall message not sent: %s", res.detail)

    def _transition(self, d: Decision) -> None:
        prev = self._prev_state
        if d.state == IdleState.WARNING and prev != IdleState.WARNING:
            minutes = max(0.0, d.stop_due_s - d.timestamp_s) / 60
            notice = Msg(
                N_(
                    "gpuwise idle: this machine will be stopped in {minutes:.0f} min. {reason}. "
                    "To keep it running: {hint}"
                ),
                minutes=minutes,
                reason=d.reason,
                hint=self.keepalive_hint,
            )
            log.warning("%s", notice)
            self._wall(notice)
            self._notify("warning", d, stop_in_min=round(minutes, 1))
            self._event(d, "warning")
        elif prev in (IdleState.WARNING, IdleState.STOPPING) and d.state in (
            IdleState.BUSY,
            IdleState.IDLE_CANDIDATE,
        ):
            log.info("stop cancelled: %s", d.reason)
            self._wall(Msg(N_("gpuwise idle: stop cancelled ({reason})"), reason=d.reason))
            self._notify("cancelled", d)
            self._event(d, "cancelled")
            self._retry_at = None

    def _hang_step(self, obs: Observation) -> HangVerdict | None:
        """Hang detection (only with watch_paths): warn when a possible hang begins and when it ends."""
        if self.hang is None or self.progress is None:
            return None
        try:
            last_progress = self.progress(obs.timestamp_s)
        except Exception as exc:  # an unreadable watch list counts as progress: it can only delay a stop
            log.warning("watched paths unreadable (counts as progress): %s", exc)
            last_progress = obs.timestamp_s
        problem = None if self._watched is None else self._watched.problem
        if (
            problem != self._watch_problem
        ):  # said once, when it begins: a typo in watch_paths blinds the check
            self._watch_problem = problem
            if problem:
                log.warning("hang detection cannot see the job's progress: %s (counts as progress)", problem)
        verdict = self.hang.observe(obs, last_progress_s=last_progress, last_user_s=last_user_activity(obs))
        before, self._hang_state = self._hang_state, verdict.state
        d = Decision(obs.timestamp_s, IdleState.BUSY, verdict.reason, 0.0, 0.0, verdict.stop_due_s or 0.0)
        if verdict.state != "none" and before == "none":
            keep = (
                Msg(N_("To keep it running: {hint}"), hint=self.keepalive_hint)
                if self.settings.hang.stop
                else Msg(N_("Check the job (py-spy dump, NCCL_DEBUG=INFO)"))
            )
            notice = Msg(N_("gpuwise idle: {reason}. {keep}"), reason=verdict.reason, keep=keep)
            log.warning("%s", notice)
            self._wall(notice)
            self._notify("hang_suspected", d, stop_on_hang=self.settings.hang.stop)
            self._event(d, "hang_suspected")
        elif verdict.state == "none" and before != "none":
            log.info("possible hang over: %s", verdict.reason)
            self._notify("hang_cleared", d)
            self._event(d, "hang_cleared")
        return verdict

    # -- stopping
    def _stop(self, d: Decision) -> None:
        now = d.timestamp_s
        if self._retry_at is not None and now < self._retry_at:
            return
        s = self.settings
        retry_s = max(s.policy.warn_s, s.interval_s)
        if s.pre_stop_hook:
            if self.dry_run:
                # the hook's text may carry credentials: it is never logged
                log.info("dry run: would run the pre-stop hook (timeout %g s)", s.hook_timeout_s)
            else:
                log.info("running the pre-stop hook (timeout %g s)", s.hook_timeout_s)
                res = self.runner.run_shell(s.pre_stop_hook, timeout_s=s.hook_timeout_s)
                if not res.ok:
                    log.error("pre-stop hook failed: %s", res.detail)
                    self._notify("hook_failed", d, detail=res.detail[-500:])
                    # Lambda's only stop is terminate: its disk is lost, so a failed sync always blocks
                    if s.hook_blocks or s.action == "lambda":
                        log.error("stop postponed by %g min (hook_blocks, or a terminate)", retry_s / 60)
                        self._retry_at = now + retry_s
                        return
                    log.warning("stopping anyway: the stop keeps the disks (set hook_blocks = true to wait)")
        still_up = any(x.get("ok") and not x.get("dry_run") for x in self._data["stops"][-1:])
        report = stop_machine(
            self, d, StopNotices(self._wall, self._notify, self._event), retry_s=retry_s, still_up=still_up
        )
        self._record(
            now, d, ok=report.ok is not False, description=report.description, provider=report.provider
        )
        if report.ok is None:  # a dry run: the idle clock starts over so the log is not flooded
            self.policy.mark_activity(now, Msg(N_("dry-run stop")))
        else:  # stopped (if the machine is still up then, try again) or failed: next try after warn_min
            self._retry_at = now + retry_s

    def _record(self, now: float, d: Decision, *, ok: bool, description: str, provider: str | None) -> None:
        self._data["stops"].append(
            {
                "at": now,
                "ok": ok,
                "dry_run": self.dry_run,
                "action": description,
                "provider": provider,
                "reason": d.reason,
                "idle_s": d.idle_s,
            }
        )

    def _persist(self, d: Decision) -> None:
        data = {
            **self._data,
            "updated_at": self.clock(),
            "dry_run": self.dry_run,
            "interval_s": self.settings.interval_s,
            "price_usd_per_hour": self.settings.price_usd_per_hour,
            "policy": self.policy.state.to_json(),
            **({} if self.hang is None else {"hang": self.hang.to_json()}),
            "decision": {
                "timestamp_s": d.timestamp_s,
                "state": d.state.value,
                "reason": d.reason,  # English; `reason_msg` lets `idle status` show it in any language
                **({"reason_msg": d.reason.to_json()} if isinstance(d.reason, Msg) else {}),
                "idle_s": d.idle_s,
                "window_s": d.window_s,
                "stop_due_s": d.stop_due_s,
            },
        }
        try:
            save_state(self.state_file, data)
        except Exception as exc:
            log.error("cannot save idle state: %s", exc)


def _ago(now: float, when: float | None) -> str:
    if when is None:
        return "unknown"
    return f"{max(0.0, now - when) / 60:.0f} min ago"
