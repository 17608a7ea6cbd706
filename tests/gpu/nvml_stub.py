"""A stub of the subset of the `pynvml` (nvidia-ml-py) API that `NvmlProbe` calls, built per scenario.

Injected into `NvmlProbe(nvml_module=stub)`; the real pynvml module is never touched. GPUs are built
from samples parsed out of the recorded fixtures, so each scenario carries a real driver generation's
values and gaps (a reading the fixture says is N/A raises NVMLError_NotSupported here).
Names, constants and error classes follow nvidia-ml-py 13.x (`.venv/.../pynvml.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from gpuwise.gpu._values import THROTTLE_BITS
from gpuwise.gpu.sample import Failed, NotSupported, Sample

# error codes as in nvml.h / pynvml
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_UNKNOWN = 999

_MESSAGES = {
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    value = NVML_ERROR_UNKNOWN

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"NVML Error with code {self.value}")


class NVMLError_NotSupported(NVMLError):  # noqa: N801, N818 - pynvml's spelling
    value = NVML_ERROR_NOT_SUPPORTED


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_DRIVER_NOT_LOADED


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_LIBRARY_NOT_FOUND


class NVMLError_FunctionNotFound(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_FUNCTION_NOT_FOUND


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_GPU_IS_LOST


class NVMLError_LibRmVersionMismatch(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_LIB_RM_VERSION_MISMATCH


class NVMLError_Timeout(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_TIMEOUT


class NVMLError_Unknown(NVMLError):  # noqa: N801, N818
    value = NVML_ERROR_UNKNOWN


@dataclass
class FakeGpu:
    """One GPU's raw NVML answers (NVML units: bytes, milliwatts, MHz, KB/s). None → NotSupported."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    bus_id: str = "00000000:00:09.0"
    util: tuple[int, int] | None = (0, 0)
    encoder: int | None = 0
    decoder: int | None = 0
    memory: tuple[int, int] | None = (0, 80 * 2**30)  # used, total
    power_mw: int | None = 70_000
    power_limit_mw: int | None = 700_000
    power_default_mw: int | None = 700_000
    temperature: int | None = 30
    fan: int | None = None
    clocks: dict[int, int] = field(default_factory=lambda: {1: 1980, 2: 2619})
    max_clocks: dict[int, int] = field(default_factory=lambda: {1: 1980, 2: 2619})
    throttle_mask: int | None = 0
    pcie: tuple[int, int, int, int] | None = (5, 5, 16, 16)  # gen cur, gen max, width cur, width max
    pcie_kb: tuple[int, int] | None = (100, 200)  # tx, rx
    replay: int | None = 0
    ecc: tuple[int, int] | None = (1, 1)
    ecc_counts: dict[tuple[int, int], int] = field(default_factory=dict)
    retired_pending: int | None = 0
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    persistence: int | None = 1
    mig: tuple[int, int] | None = (0, 0)
    compute_capability: tuple[int, int] | None = (9, 0)
    pstate: int | None = 0
    display_active: int | None = 0
    compute_procs: list[tuple[int, int]] | None = field(default_factory=list)  # (pid, used bytes)
    graphics_procs: list[tuple[int, int]] | None = field(default_factory=list)
    raise_on: dict[str, type[NVMLError]] = field(default_factory=dict)  # function name -> error
    lost: bool = False  # every call raises GpuIsLost
    handle_error: type[NVMLError] | None = None  # nvmlDeviceGetHandleByIndex raises this
    xid_events_supported: bool = True  # nvmlDeviceRegisterEvents for Xids succeeds


def _val(r: Any) -> Any:
    return None if isinstance(r, NotSupported | Failed) else r


def gpu_from_sample(s: Sample) -> FakeGpu:
    """A FakeGpu answering what the fixture recorded; readings the fixture lacks raise NotSupported."""
    used, total = _val(s.memory_used_bytes), _val(s.memory_total_bytes)
    util, mem_util = _val(s.util_gpu_pct), _val(s.util_memory_pct)
    reasons = _val(s.throttle_reasons)
    mask = None if reasons is None else sum(bit for bit, name in THROTTLE_BITS if name in reasons)
    pcie = (
        _val(s.pcie_gen_current),
        _val(s.pcie_gen_max),
        _val(s.pcie_width_current),
        _val(s.pcie_width_max),
    )
    rows = (
        _val(s.remapped_rows_correctable),
        _val(s.remapped_rows_uncorrectable),
        _val(s.remapped_rows_pending),
        _val(s.remapped_rows_failure),
    )

    def mw(x: Any) -> int | None:
        v = _val(x)
        return None if v is None else round(v * 1000)

    def num(x: Any) -> int | None:
        v = _val(x)
        return None if v is None else round(v)

    procs = _val(s.processes) or ()
    ecc_on = _val(s.ecc_mode_enabled)
    return FakeGpu(
        name=_val(s.name) or "GPU",
        uuid=_val(s.uuid) or "GPU-unknown",
        bus_id=_val(s.bus_id) or "00000000:00:00.0",
        util=None if util is None or mem_util is None else (round(util), round(mem_util)),
        encoder=num(s.util_encoder_pct),
        decoder=num(s.util_decoder_pct),
        memory=None if used is None or total is None else (used, total),
        power_mw=mw(s.power_draw_watts),
        power_limit_mw=mw(s.power_limit_watts),
        power_default_mw=mw(s.power_default_limit_watts),
        temperature=num(s.temperature_c),
        fan=num(s.fan_speed_pct),
        clocks={1: num(s.sm_clock_mhz) or 0, 2: num(s.memory_clock_mhz) or 0},
        max_clocks={1: num(s.sm_clock_max_mhz) or 0, 2: num(s.memory_clock_max_mhz) or 0},
        throttle_mask=mask,
        pcie=None if None in pcie else pcie,  # type: ignore[arg-type]
        pcie_kb=None,
        replay=num(s.pcie_replay_count),
        ecc=None if ecc_on is None else (int(ecc_on), int(ecc_on)),
        ecc_counts={
            (0, 0): _val(s.ecc_corrected_volatile) or 0,
            (1, 0): _val(s.ecc_uncorrected_volatile) or 0,
            (0, 1): _val(s.ecc_corrected_aggregate) or 0,
            (1, 1): _val(s.ecc_uncorrected_aggregate) or 0,
        },
        retired_pending=None
        if _val(s.retired_pages_pending) is None
        else int(bool(_val(s.retired_pages_pending))),
        remapped=None if None in rows else tuple(int(x) for x in rows),  # type: ignore[arg-type]
        persistence=None if _val(s.persistence_mode) is None else int(bool(_val(s.persistence_mode))),
        mig=None if _val(s.mig_mode) is None else (int(bool(_val(s.mig_mode))),) * 2,  # type: ignore[arg-type]
        pstate=None if _val(s.pstate) is None else int(str(_val(s.pstate))[1:]),
        compute_procs=[
            (p.pid, _val(p.used_memory_bytes) or 0)
            for p in procs
            if p.kind in ("compute", "compute+graphics")
        ],
        graphics_procs=[
            (p.pid, _val(p.used_memory_bytes) or 0)
            for p in procs
            if p.kind in ("graphics", "compute+graphics")
        ],
    )


class StubNvml:
    """A module-like object: `NvmlProbe(nvml_module=StubNvml(gpus, …))`."""

    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLError_LibRmVersionMismatch = NVMLError_LibRmVersionMismatch
    NVMLError_Unknown = NVMLError_Unknown
    NVMLError_Timeout = NVMLError_Timeout

    nvmlEventTypeXidCriticalError = 0x8  # noqa: N815 - pynvml's name
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    NVML_AGGREGATE_ECC = 1

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        driver: str = "590.48.01",
        cuda: int = 13010,
        init_error: type[NVMLError] | None = None,
        missing: frozenset[str] = frozenset(),
    ) -> None:
        self.gpus = gpus
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.missing = missing  # functions this driver generation lacks: calling raises FunctionNotFound
        self.calls: list[str] = []
        self.shutdowns = 0
        self.pending_events: list[tuple[int, int]] = []  # (GPU index, Xid) delivered on the next wait
        self.registered: set[int] = set()
        self.freed = 0

    # --- plumbing: every device call goes through _dev ------------------------------------------

    def _dev(self, name: str, handle: int) -> FakeGpu:
        self.calls.append(name)
        if name in self.missing:
            raise NVMLError_FunctionNotFound()
        gpu = self.gpus[handle]
        if gpu.lost:
            raise NVMLError_GpuIsLost()
        if name in gpu.raise_on:
            raise gpu.raise_on[name]()
        return gpu

    @staticmethod
    def _some(value: Any) -> Any:
        if value is None:
            raise NVMLError_NotSupported()
        return value

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        if self.init_error is not None:
            raise self.init_error()

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # noqa: N802
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        gpu = self.gpus[index]
        if gpu.handle_error is not None:
            raise gpu.handle_error()
        return index

    def nvmlDeviceGetName(self, h: int) -> str:  # noqa: N802
        return self._dev("nvmlDeviceGetName", h).name

    def nvmlDeviceGetUUID(self, h: int) -> str:  # noqa: N802
        return self._dev("nvmlDeviceGetUUID", h).uuid

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:  # noqa: N802
        # pynvml returns a ctypes struct whose busId is bytes
        return SimpleNamespace(busId=self._dev("nvmlDeviceGetPciInfo", h).bus_id.encode())

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:  # noqa: N802
        gpu, mem = self._some(self._dev("nvmlDeviceGetUtilizationRates", h).util)
        return SimpleNamespace(gpu=gpu, memory=mem)

    def nvmlDeviceGetEncoderUtilization(self, h: int) -> list[int]:  # noqa: N802
        return [self._some(self._dev("nvmlDeviceGetEncoderUtilization", h).encoder), 167000]

    def nvmlDeviceGetDecoderUtilization(self, h: int) -> list[int]:  # noqa: N802
        return [self._some(self._dev("nvmlDeviceGetDecoderUtilization", h).decoder), 167000]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:  # noqa: N802
        used, total = self._some(self._dev("nvmlDeviceGetMemoryInfo", h).memory)
        return SimpleNamespace(used=used, total=total, free=total - used)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetPowerUsage", h).power_mw)  # type: ignore[no-any-return]

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetEnforcedPowerLimit", h).power_limit_mw)  # type: ignore[no-any-return]

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetPowerManagementDefaultLimit", h)
        return self._some(gpu.power_default_mw)  # type: ignore[no-any-return]

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:  # noqa: N802
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._some(self._dev("nvmlDeviceGetTemperature", h).temperature)  # type: ignore[no-any-return]

    def nvmlDeviceGetFanSpeed(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetFanSpeed", h).fan)  # type: ignore[no-any-return]

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetClockInfo", h).clocks.get(kind))  # type: ignore[no-any-return]

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetMaxClockInfo", h).max_clocks.get(kind))  # type: ignore[no-any-return]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetCurrentClocksEventReasons", h)
        return self._some(gpu.throttle_mask)  # type: ignore[no-any-return]

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        return self._some(gpu.throttle_mask)  # type: ignore[no-any-return]

    def _pcie(self, name: str, h: int, i: int) -> int:
        return self._some(self._dev(name, h).pcie)[i]  # type: ignore[no-any-return]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:  # noqa: N802
        return self._pcie("nvmlDeviceGetCurrPcieLinkGeneration", h, 0)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:  # noqa: N802
        return self._pcie("nvmlDeviceGetMaxPcieLinkGeneration", h, 1)

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:  # noqa: N802
        return self._pcie("nvmlDeviceGetCurrPcieLinkWidth", h, 2)

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:  # noqa: N802
        return self._pcie("nvmlDeviceGetMaxPcieLinkWidth", h, 3)

    def nvmlDeviceGetPcieThroughput(self, h: int, counter: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetPcieThroughput", h).pcie_kb)[counter]  # type: ignore[no-any-return]

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetPcieReplayCounter", h).replay)  # type: ignore[no-any-return]

    def nvmlDeviceGetEccMode(self, h: int) -> list[int]:  # noqa: N802
        return list(self._some(self._dev("nvmlDeviceGetEccMode", h).ecc))

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter: int) -> int:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetTotalEccErrors", h)
        return self._some(gpu.ecc_counts.get((error_type, counter)))  # type: ignore[no-any-return]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: int) -> int:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetRetiredPagesPendingStatus", h)
        return self._some(gpu.retired_pending)  # type: ignore[no-any-return]

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetRemappedRows", h).remapped)  # type: ignore[no-any-return]

    def nvmlDeviceGetPersistenceMode(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetPersistenceMode", h).persistence)  # type: ignore[no-any-return]

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:  # noqa: N802
        return list(self._some(self._dev("nvmlDeviceGetMigMode", h).mig))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:  # noqa: N802
        gpu = self._dev("nvmlDeviceGetCudaComputeCapability", h)
        return self._some(gpu.compute_capability)  # type: ignore[no-any-return]

    def nvmlDeviceGetPerformanceState(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetPerformanceState", h).pstate)  # type: ignore[no-any-return]

    def nvmlDeviceGetDisplayActive(self, h: int) -> int:  # noqa: N802
        return self._some(self._dev("nvmlDeviceGetDisplayActive", h).display_active)  # type: ignore[no-any-return]

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:  # noqa: N802
        procs = self._some(self._dev("nvmlDeviceGetComputeRunningProcesses", h).compute_procs)
        return [SimpleNamespace(pid=p, usedGpuMemory=m, gpuInstanceId=0xFFFFFFFF) for p, m in procs]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[Any]:  # noqa: N802
        procs = self._some(self._dev("nvmlDeviceGetGraphicsRunningProcesses", h).graphics_procs)
        return [SimpleNamespace(pid=p, usedGpuMemory=m, gpuInstanceId=0xFFFFFFFF) for p, m in procs]

    # --- events ---------------------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> str:  # noqa: N802
        return "event-set"

    def nvmlDeviceRegisterEvents(self, h: int, types: int, event_set: str) -> None:  # noqa: N802
        assert types == self.nvmlEventTypeXidCriticalError and event_set == "event-set"
        if not self.gpus[h].xid_events_supported:
            raise NVMLError_NotSupported()
        self.registered.add(h)

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:  # noqa: N802
        assert event_set == "event-set"
        assert timeout_ms == 0  # the probe must never block
        if not self.pending_events:
            raise NVMLError_Timeout()
        index, xid = self.pending_events.pop(0)
        return SimpleNamespace(device=index, eventType=self.nvmlEventTypeXidCriticalError, eventData=xid)

    def nvmlDeviceGetIndex(self, h: int) -> int:  # noqa: N802
        return h

    def nvmlEventSetFree(self, event_set: str) -> None:  # noqa: N802
        assert event_set == "event-set"
        self.freed += 1
