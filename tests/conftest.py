import os

import pytest
from hypothesis import settings

# Tests never depend on a user's environment for profile lookups or seeds.
os.environ.pop("RLTWIN_PROFILE_PATH", None)
# Nor on the network or the user's Hugging Face cache: a hub id the model catalog does not know is
# never downloaded (tests of the download mock it) and no cached config.json is read.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_CACHE"] = os.path.join(os.path.dirname(__file__), ".no-hf-cache")  # never created

# Property tests explore new examples on every local run (a failure there is a bug to fix); in
# CI (CI set, as .ci/run sets it) they replay a fixed set, so a landing is never refused by a draw
# no earlier run made. `pytest --hypothesis-profile=explore` explores anywhere.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore")
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def base() -> dict:
    """A small valid scenario as raw data, for tests that change one thing."""
    return {
        "name": "t",
        "model": "qwen2.5-7b",
        "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "algorithm": {"prompts_per_step": 16, "responses_per_prompt": 4},
        "workload": {"response_tokens": {"kind": "lognormal", "median": 500, "sigma": 0.5, "max": 2048}},
    }
