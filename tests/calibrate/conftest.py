"""Shared fixtures: a synthetic calibration with known answers."""

from pathlib import Path

import pytest

from calibrate.env import Target
from calibrate.store import Row, Store


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: runs torch end to end (a small probe or calibration)")


TARGET = Target(device="cpu", kind="cpu", name="cpu-test", device_name="Test CPU (2 threads)", host="test",
                torch="2.13.0+cpu", cuda=None, nccl=None, driver=None, capacity_bytes=16e9, gpu_count=1,
                date="2026-01-01")


def _store(tmp_path: Path) -> Store:
    """Synthetic rows: GEMM rate = 1e11 · f/(f + 1e7) in fp32, 4× that in bf16; copies peaking at
    1e11 B/s; decode iterations of 70 us + 100 us per layer (10 ops of 10 us)."""
    store = Store(tmp_path / "cpu.csv", TARGET.device_name)

    def add(key, suite, op, dtype, size, seconds, params=""):
        store.append(Row(key, suite, op, dtype, size, seconds, size / seconds, 0.0, params, 5, TARGET.device_name))

    for dtype, scale in (("fp32", 1.0), ("bf16", 4.0)):
        for f in (1e5, 1e6, 1e7, 1e8, 1e9, 1e10):
            rate = scale * 1e11 * f / (f + 1e7)
            add(f"mm/{dtype}/{f}", "matmul", "out", dtype, f, f / rate)
    for b, rate in ((3e4, 2e10), (5e5, 9e10), (8e6, 1e11), (1.3e8, 4e10)):
        add(f"mem/{b}", "memory", "copy", "u8", b, b / rate)
    for f, rate in ((1e6, 2e10), (1e8, 6e10)):
        add(f"attn/{f}", "attention", "prefill", "fp32", f, f / rate)
    for layers in (1, 2, 4, 8):
        add(f"it/{layers}", "overhead", "decode_iteration", "fp32", layers, 70e-6 + layers * 100e-6,
            f"layers={layers} ops_per_layer=10")
    add("kernel", "overhead", "kernel", "fp32", 1.0, 2e-6)
    for op, nbytes, secs in (("all_reduce", 4096, 1e-4), ("all_reduce", 4 << 20, 2e-3), ("broadcast", 4 << 20, 1e-3)):
        alg = nbytes / secs
        store.append(Row(f"coll/{op}/{nbytes}", "collective", op, "gloo", nbytes, secs, alg,
                         alg * (1.0 if op == "all_reduce" else 1.0), f"world=2 bytes={nbytes}", 5, TARGET.device_name))
    return store



@pytest.fixture
def target() -> Target:
    return TARGET


@pytest.fixture
def synthetic_store(tmp_path) -> Store:
    return _store(tmp_path)
