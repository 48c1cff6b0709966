"""Calibration: torch microbenchmarks -> a hardware profile; a probe RL loop that checks the twin.

Run ``python -m calibrate --help`` (or ``twin calibrate``). The measuring path needs only
torch, numpy and pyyaml, so it runs on a bare cluster node; the twin (pydantic) is used to
validate the written profile and to predict the probe loop when it is importable.
"""
