"""What is being calibrated: the device, its name, and the software it was measured with."""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import os
import platform
import re
import socket
import subprocess
import sys
from dataclasses import dataclass

from calibrate.errors import CalibrationError


@dataclass(frozen=True)
class Target:
    """The device under calibration and the provenance the profile records."""

    device: str  # "cpu" or "cuda"
    kind: str  # profile kind: "cpu" or "gpu"
    name: str  # profile name, a slug
    device_name: str
    host: str
    torch: str
    cuda: str | None
    nccl: str | None
    driver: str | None
    capacity_bytes: float
    gpu_count: int
    date: str


def slug(text: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_memory_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16e9


def nvidia_driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def detect(device: str) -> Target:
    """Inspect ``device`` ('cpu' or 'cuda'); raises CalibrationError when it is not there."""
    import torch

    host = socket.gethostname()
    date = _dt.date.today().isoformat()
    nccl = None
    if device == "cuda":
        if not torch.cuda.is_available():
            raise CalibrationError("--device cuda: no CUDA GPU is visible to torch "
                                   f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); "
                                   "use --device cpu or a CUDA build of torch")
        props = torch.cuda.get_device_properties(0)
        try:
            nccl = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # noqa: BLE001 - NCCL absent from this build
            nccl = None
        return Target("cuda", "gpu", slug(props.name), props.name, host, str(torch.__version__),
                      str(torch.version.cuda), nccl, nvidia_driver(), float(props.total_memory),
                      torch.cuda.device_count(), date)
    if device != "cpu":
        raise CalibrationError(f"unknown --device {device!r}; allowed: cpu, cuda")
    return Target("cpu", "cpu", f"cpu-{slug(host)}", f"{cpu_model()} ({torch.get_num_threads()} threads)",
                  host, str(torch.__version__), None, None, None, host_memory_bytes(), 1, date)


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20  # glibc's ceiling on 64-bit hosts


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep freed host memory for reuse, as CUDA's caching allocator
    keeps device memory; True when it took effect.

    By default glibc serves each allocation above its mmap threshold (128 KiB, raised as such
    blocks are freed) straight from the OS and gives it back when freed, so an eager CPU pass
    re-faults its activations every time, the kernel zeroing each page: on this project's
    2-core CPU that was 16% of a probe scoring pass (medium: 212 -> 182 ms), a cost of the
    allocator that the twin does not model, on a GPU nobody pays, and that PyTorch's CPU
    performance guides remove with jemalloc or tcmalloc. Calibration and the probe both run
    with it, so that the profile and the loop it is checked against see the same memory.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
