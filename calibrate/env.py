"""What is being calibrated: the device, its name, and the software it was measured with."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import socket
import subprocess
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
