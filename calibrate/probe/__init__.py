"""The probe: a small, real GRPO loop in plain torch whose phases are timed.

``calibrate.probe.loop.run_probe`` runs it; ``calibrate.validate_probe`` predicts the same
configurations with the twin and compares. Importing this package does not import torch.
"""
