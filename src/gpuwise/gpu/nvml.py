"""Live GPU probe through NVML (NVIDIA's nvidia-ml-py bindings, module `pynvml`): no subprocess per sample.

Every reading is fetched by its own NVML call, so one failing call costs only that reading:
`NVMLError_NotSupported` (and a function the installed driver lacks) → NotSupported, any other NVML
error → Failed(why). A GPU that is lost (`NVML_ERROR_GPU_IS_LOST`, or whose handle cannot be obtained)
becomes a `Sample(lost=True)` and never hides the others.

`pynvml` is imported lazily inside `NvmlProbe` unless a module-like object is injected (tests pass a stub
built per scenario; the real module is never patched). Must not import pynvml at module level.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable
from typing import Any

from gpuwise.errors import GpuError
from gpuwise.gpu._values import drop_impossible, throttle_ids_from_mask
from gpuwise.gpu.kernel_log import normalize_bus_id
from gpuwise.gpu.sample import NOT_SUPPORTED, Failed, GpuProcess, NotSupported, Reading, Sample, Snapshot
from gpuwise.gpu.smi_errors import ErrorKind, lost_sample

__all__ = ["NvmlInitError", "NvmlProbe", "NvmlUnavailableError"]

# nvml.h: NVML_VALUE_NOT_AVAILABLE for unsigned long long fields (a process whose memory is unknown)
_ULL_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF

_FIX_DRIVER = (
    "install the NVIDIA driver (e.g. sudo apt install nvidia-driver-550, or your cloud's GPU image), "
    "reboot, then check with: nvidia-smi"
)


class NvmlUnavailableError(Exception):
    """The NVML library could not be loaded (no driver installed, or not a GPU machine)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why

    def as_gpu_error(self) -> GpuError:
        return NvmlInitError(
            "No NVIDIA driver found",
            kind=ErrorKind.DRIVER_MISSING,
            why=f"Is this a GPU machine? Neither the NVML library nor nvidia-smi could be found ({self.why})",
            fix=_FIX_DRIVER + "; or replay a recording with --replay PATH",
        )


class NvmlInitError(GpuError):
    """NVML loaded but would not start; `kind` is one of `ErrorKind` (the doctor maps it to a finding)."""

    def __init__(self, message: str, *, kind: str, why: str = "", fix: str = "") -> None:
        super().__init__(message, why=why, fix=fix)
        self.kind = kind


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


class NvmlProbe:
    """Reads every GPU through NVML. `nvml_module`: an object with pynvml's API (default: `import pynvml`)."""

    def __init__(
        self, nvml_module: Any = None, *, clock: Callable[[], float] = time.time, watch_xids: bool = True
    ) -> None:
        if nvml_module is None:
            try:
                nvml_module = importlib.import_module("pynvml")
            except ImportError as exc:  # nvidia-ml-py is a dependency; a broken install still must not crash
                raise NvmlUnavailableError(f"nvidia-ml-py is not importable: {exc}") from exc
        self.nvml = nvml_module
        self._clock = clock
        self._error = getattr(nvml_module, "NVMLError", Exception)
        try:
            nvml_module.nvmlInit()
        except self._error as exc:
            raise self._init_error(exc) from exc
        self._handles: dict[int, Any] = {}
        try:
            self.count = int(nvml_module.nvmlDeviceGetCount())
        except self._error as exc:
            nvml_module.nvmlShutdown()
            raise NvmlInitError(
                "NVML cannot count the GPUs", kind=ErrorKind.NVML_INIT, why=str(exc), fix=_FIX_DRIVER
            ) from exc
        self.driver_version: Reading[str] = self._call_str(nvml_module.nvmlSystemGetDriverVersion)
        self.cuda_driver_version: Reading[str] = self._cuda_version()
        self._closed = False
        # Xid events (nvmlEventTypeXidCriticalError) counted per GPU index since the probe opened
        self._watch_xids = watch_xids
        self._event_set: Any = None
        self._xid_registered: set[int] = set()
        self._xid_count: dict[int, int] = {}
        self._xid_last: dict[int, int] = {}

    # --- errors ---------------------------------------------------------------------------------

    def _is(self, exc: BaseException, name: str) -> bool:
        cls = getattr(self.nvml, name, None)
        return isinstance(cls, type) and isinstance(exc, cls)

    def _init_error(self, exc: BaseException) -> Exception:
        if self._is(exc, "NVMLError_LibraryNotFound"):
            return NvmlUnavailableError(f"libnvidia-ml.so could not be loaded: {exc}")
        if self._is(exc, "NVMLError_DriverNotLoaded"):
            return NvmlInitError(
                "No NVIDIA driver found",
                kind=ErrorKind.DRIVER_MISSING,
                why=f"Is this a GPU machine? NVML says: {exc} (the nvidia kernel module is not loaded)",
                fix=_FIX_DRIVER,
            )
        if self._is(exc, "NVMLError_LibRmVersionMismatch"):
            return NvmlInitError(
                "NVML and the loaded NVIDIA kernel module are different versions",
                kind=ErrorKind.LIBRARY_MISMATCH,
                why="the driver was upgraded but the old kernel module is still loaded",
                fix="reboot the machine (or reload the nvidia kernel modules)",
            )
        return NvmlInitError(
            "Failed to initialize NVML",
            kind=ErrorKind.NVML_INIT,
            why=f"NVML says: {exc}",
            fix="check nvidia-smi; inside a container, restart it with --gpus all "
            "(a long-running container can lose its GPU devices)",
        )

    def _reading(self, exc: BaseException) -> NotSupported | Failed:
        if self._is(exc, "NVMLError_NotSupported") or self._is(exc, "NVMLError_FunctionNotFound"):
            return NOT_SUPPORTED
        return Failed(str(exc) or type(exc).__name__)

    def _lost(self, exc: BaseException) -> bool:
        return self._is(exc, "NVMLError_GpuIsLost")

    # --- calls ----------------------------------------------------------------------------------

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args), or the NotSupported/Failed it stands for; GpuIsLost propagates (the GPU is gone)."""
        try:
            return fn(*args)
        except self._error as exc:
            if self._lost(exc):
                raise
            return self._reading(exc)

    def _call_str(self, fn: Callable[..., Any], *args: Any) -> Reading[str]:
        got = self._call(fn, *args)
        return got if isinstance(got, NotSupported | Failed) else _text(got)

    def _fn(self, *names: str) -> Callable[..., Any] | None:
        for name in names:
            fn = getattr(self.nvml, name, None)
            if fn is not None:
                return fn  # type: ignore[no-any-return]
        return None

    def _cuda_version(self) -> Reading[str]:
        fn = self._fn("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")
        if fn is None:
            return NOT_SUPPORTED
        got = self._call(fn)
        if isinstance(got, NotSupported | Failed):
            return got
        value = int(got)  # 12040 -> "12.4"
        return f"{value // 1000}.{value % 1000 // 10}"

    def _handle(self, index: int) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
            self._handles[index] = handle
        return handle

    # --- reading --------------------------------------------------------------------------------

    def read(self) -> Snapshot:
        if self._closed:
            raise GpuError("the NVML probe is closed", fix="open a new probe")
        now = self._clock()
        self._drain_xids()
        samples = []
        for index in range(self.count):
            try:
                handle = self._handle(index)
            except self._error as exc:
                self._handles.pop(index, None)
                samples.append(lost_sample(now, index, NOT_SUPPORTED, f"no device handle: {exc}"))
                continue
            try:
                samples.append(self._sample(handle, index, now))
            except self._error as exc:  # only GpuIsLost gets here
                self._handles.pop(index, None)
                samples.append(lost_sample(now, index, NOT_SUPPORTED, str(exc) or "GPU is lost"))
        return Snapshot(
            samples=tuple(samples),
            driver_version=self.driver_version,
            cuda_driver_version=self.cuda_driver_version,
        )

    def _sample(self, h: Any, index: int, now: float) -> Sample:
        """Every reading of one GPU, one NVML call (or a few) per reading, in groups."""
        f: dict[str, Any] = {}
        for group in (
            self._identity,
            self._utilization,
            self._memory_and_power,
            self._thermal_and_clocks,
            self._pcie,
            self._memory_health,
            self._modes,
        ):
            f.update(group(h))
        f["processes"] = self._processes(h)
        if index in self._xid_registered:
            f["xid_errors"] = self._xid_count.get(index, 0)
            if index in self._xid_last:
                f["xid_last"] = self._xid_last[index]
        # the same rule as the nvidia-smi parsers: a 0 MiB framebuffer or 0 W limit (vGPU guests) is unknown
        return Sample(timestamp_s=now, index=index, **drop_impossible(f))

    def _identity(self, h: Any) -> dict[str, Any]:
        n = self.nvml
        f: dict[str, Any] = {}
        f["name"] = self._call_str(n.nvmlDeviceGetName, h)
        f["uuid"] = self._call_str(n.nvmlDeviceGetUUID, h)
        pci = self._call(n.nvmlDeviceGetPciInfo, h)
        if isinstance(pci, NotSupported | Failed):
            f["bus_id"] = pci
        else:
            f["bus_id"] = normalize_bus_id(_text(getattr(pci, "busId", "")))
        return f

    def _utilization(self, h: Any) -> dict[str, Any]:
        n = self.nvml
        f: dict[str, Any] = {}
        util = self._call(n.nvmlDeviceGetUtilizationRates, h)
        if isinstance(util, NotSupported | Failed):
            f["util_gpu_pct"] = f["util_memory_pct"] = util
        else:
            f["util_gpu_pct"] = float(util.gpu)
            f["util_memory_pct"] = float(util.memory)
        for field_name, fn_name in (
            ("util_encoder_pct", "nvmlDeviceGetEncoderUtilization"),
            ("util_decoder_pct", "nvmlDeviceGetDecoderUtilization"),
        ):
            got = self._call(getattr(n, fn_name), h)
            f[field_name] = got if isinstance(got, NotSupported | Failed) else float(got[0])
        return f

    def _memory_and_power(self, h: Any) -> dict[str, Any]:
        n = self.nvml
        c = self._call
        f: dict[str, Any] = {}
        mem = c(n.nvmlDeviceGetMemoryInfo, h)
        if isinstance(mem, NotSupported | Failed):
            f["memory_used_bytes"] = f["memory_total_bytes"] = mem
        else:
            f["memory_used_bytes"] = int(mem.used)
            f["memory_total_bytes"] = int(mem.total)
        f["power_draw_watts"] = self._milli(c(n.nvmlDeviceGetPowerUsage, h))
        energy = getattr(n, "nvmlDeviceGetTotalEnergyConsumption", None)  # Volta+; absent in old bindings
        f["energy_mj"] = self._num(c(energy, h)) if energy is not None else NOT_SUPPORTED
        f["power_limit_watts"] = self._milli(c(n.nvmlDeviceGetEnforcedPowerLimit, h))
        f["power_default_limit_watts"] = self._milli(c(n.nvmlDeviceGetPowerManagementDefaultLimit, h))
        return f

    def _thermal_and_clocks(self, h: Any) -> dict[str, Any]:
        n = self.nvml
        c = self._call
        return {
            "temperature_c": self._num(c(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU)),
            "fan_speed_pct": self._num(c(n.nvmlDeviceGetFanSpeed, h)),
            "sm_clock_mhz": self._num(c(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM)),
            "memory_clock_mhz": self._num(c(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM)),
            "sm_clock_max_mhz": self._num(c(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM)),
            "memory_clock_max_mhz": self._num(c(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_MEM)),
            "throttle_reasons": self._throttle(h),
        }

    def _pcie(self, h: Any) -> dict[str, Any]:
        n = self.nvml
        c = self._call
        return {
            "pcie_gen_current": self._int(c(n.nvmlDeviceGetCurrPcieLinkGeneration, h)),
            "pcie_gen_max": self._int(c(n.nvmlDeviceGetMaxPcieLinkGeneration, h)),
            "pcie_width_current": self._int(c(n.nvmlDeviceGetCurrPcieLinkWidth, h)),
            "pcie_width_max": self._int(c(n.nvmlDeviceGetMaxPcieLinkWidth, h)),
            # nvmlDeviceGetPcieThroughput: KB/s over a 20 ms window
            "pcie_tx_bytes_per_s": self._kb(c(n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_TX_BYTES)),
            "pcie_rx_bytes_per_s": self._kb(c(n.nvmlDeviceGetPcieThroughput, h, n.NVML_PCIE_UTIL_RX_BYTES)),
            "pcie_replay_count": self._int(c(n.nvmlDeviceGetPcieReplayCounter, h)),
        }

    def _memory_health(self, h: Any) -> dict[str, Any]:
        """ECC mode and counters, retired pages and remapped rows."""
        n = self.nvml
        c = self._call
        f: dict[str, Any] = {}
        ecc = c(n.nvmlDeviceGetEccMode, h)
        f["ecc_mode_enabled"] = ecc if isinstance(ecc, NotSupported | Failed) else bool(ecc[0])
        for field_name, err_type, counter in (
            ("ecc_corrected_volatile", "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
            ("ecc_uncorrected_volatile", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"),
            ("ecc_corrected_aggregate", "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC"),
            ("ecc_uncorrected_aggregate", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC"),
        ):
            if ecc is False or (not isinstance(ecc, NotSupported | Failed) and not ecc[0]):
                f[field_name] = NOT_SUPPORTED  # ECC off: the counters do not count
            else:
                f[field_name] = self._int(
                    c(n.nvmlDeviceGetTotalEccErrors, h, getattr(n, err_type), getattr(n, counter))
                )
        pending = c(n.nvmlDeviceGetRetiredPagesPendingStatus, h)
        f["retired_pages_pending"] = pending if isinstance(pending, NotSupported | Failed) else bool(pending)
        remap_fn = self._fn("nvmlDeviceGetRemappedRows")
        rows = c(remap_fn, h) if remap_fn is not None else NOT_SUPPORTED
        if isinstance(rows, NotSupported | Failed):
            for name in ("correctable", "uncorrectable", "pending", "failure"):
                f[f"remapped_rows_{name}"] = rows
        else:
            corr, unc, pend, fail = rows
            f["remapped_rows_correctable"] = int(corr)
            f["remapped_rows_uncorrectable"] = int(unc)
            f["remapped_rows_pending"] = bool(pend)
            f["remapped_rows_failure"] = bool(fail)
        return f

    def _modes(self, h: Any) -> dict[str, Any]:
        """Persistence and MIG mode, compute capability, performance state, display."""
        n = self.nvml
        c = self._call
        f: dict[str, Any] = {}
        persist = c(n.nvmlDeviceGetPersistenceMode, h)
        f["persistence_mode"] = persist if isinstance(persist, NotSupported | Failed) else bool(persist)
        mig_fn = self._fn("nvmlDeviceGetMigMode")
        mig = c(mig_fn, h) if mig_fn is not None else NOT_SUPPORTED
        f["mig_mode"] = mig if isinstance(mig, NotSupported | Failed) else bool(mig[0])
        cap = c(n.nvmlDeviceGetCudaComputeCapability, h)
        f["compute_capability"] = cap if isinstance(cap, NotSupported | Failed) else f"{cap[0]}.{cap[1]}"
        pstate = c(n.nvmlDeviceGetPerformanceState, h)
        f["pstate"] = pstate if isinstance(pstate, NotSupported | Failed) else f"P{int(pstate)}"
        disp = c(n.nvmlDeviceGetDisplayActive, h)
        f["display_active"] = disp if isinstance(disp, NotSupported | Failed) else bool(disp)
        return f

    @staticmethod
    def _num(got: Any) -> Reading[float]:
        return got if isinstance(got, NotSupported | Failed) else float(got)

    @staticmethod
    def _int(got: Any) -> Reading[int]:
        return got if isinstance(got, NotSupported | Failed) else int(got)

    @staticmethod
    def _milli(got: Any) -> Reading[float]:
        """NVML power is in milliwatts."""
        return got if isinstance(got, NotSupported | Failed) else float(got) / 1000.0

    @staticmethod
    def _kb(got: Any) -> Reading[float]:
        return got if isinstance(got, NotSupported | Failed) else float(got) * 1000.0

    def _throttle(self, h: Any) -> Reading[tuple[str, ...]]:
        # renamed "event reasons" with driver 535; older drivers and bindings only know the throttle name
        mask: Any = NOT_SUPPORTED
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = self._fn(name)
            if fn is None:
                continue
            mask = self._call(fn, h)
            if not isinstance(mask, NotSupported):
                break
        if isinstance(mask, NotSupported | Failed):
            return mask
        return throttle_ids_from_mask(int(mask))

    def _processes(self, h: Any) -> Reading[tuple[GpuProcess, ...]]:
        by_pid: dict[int, tuple[str, Reading[int]]] = {}
        results = []
        for kind, fn_name in (
            ("compute", "nvmlDeviceGetComputeRunningProcesses"),
            ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
        ):
            fn = self._fn(fn_name)
            got = self._call(fn, h) if fn is not None else NOT_SUPPORTED
            results.append(got)
            if isinstance(got, NotSupported | Failed):
                continue
            for proc in got:
                pid = int(proc.pid)
                raw = getattr(proc, "usedGpuMemory", None)
                used: Reading[int] = (
                    NOT_SUPPORTED if raw is None or int(raw) == _ULL_NOT_AVAILABLE else int(raw)
                )
                if pid in by_pid:
                    _, old_used = by_pid[pid]
                    by_pid[pid] = ("compute+graphics", old_used if isinstance(old_used, int) else used)
                else:
                    by_pid[pid] = (kind, used)
        if all(isinstance(r, NotSupported | Failed) for r in results):
            failed = next((r for r in results if isinstance(r, Failed)), None)
            return failed or NOT_SUPPORTED
        return tuple(
            GpuProcess(pid=pid, name=self._process_name(pid), used_memory_bytes=used, kind=kind)
            for pid, (kind, used) in sorted(by_pid.items())
        )

    @staticmethod
    def _process_name(pid: int) -> str:
        # NVML's own nvmlSystemGetProcessName needs the pid to be visible anyway; /proc is cheaper
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:  # noqa: PTH123
                return fh.read().strip()
        except OSError:
            return ""

    # --- Xid events ---------------------------------------------------------------------------

    def _drain_xids(self) -> None:
        """Register for Xid events once, then take what arrived since the last read (never waits)."""
        if not self._watch_xids:
            return
        n = self.nvml
        xid_type = int(getattr(n, "nvmlEventTypeXidCriticalError", 0))
        if self._event_set is None:
            needed = (
                "nvmlEventSetCreate",
                "nvmlDeviceRegisterEvents",
                "nvmlEventSetWait_v2",
                "nvmlDeviceGetIndex",
            )
            if not xid_type or any(self._fn(name) is None for name in needed):
                self._watch_xids = False
                return
            try:
                self._event_set = n.nvmlEventSetCreate()
            except self._error:
                self._watch_xids = False  # e.g. not supported on this platform: xid_errors stays unknown
                return
            for index in range(self.count):
                try:
                    n.nvmlDeviceRegisterEvents(self._handle(index), xid_type, self._event_set)
                except self._error:
                    continue  # this GPU cannot report Xids through NVML
                self._xid_registered.add(index)
        for _ in range(1000):  # bounded: a storm of events must not stall a sample
            try:
                data = n.nvmlEventSetWait_v2(self._event_set, 0)
            except self._error:
                break  # NVMLError_Timeout: nothing pending (or the set broke: try again next read)
            if not int(getattr(data, "eventType", 0)) & xid_type:
                continue
            try:
                index = int(n.nvmlDeviceGetIndex(data.device))
            except self._error:
                continue
            self._xid_count[index] = self._xid_count.get(index, 0) + 1
            self._xid_last[index] = int(data.eventData)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._event_set is not None:
                with contextlib.suppress(self._error):
                    self.nvml.nvmlEventSetFree(self._event_set)
            with contextlib.suppress(self._error):
                self.nvml.nvmlShutdown()
