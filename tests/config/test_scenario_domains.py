"""cluster.nvlink_domain_gpus: what it accepts, what it refuses (one line naming the field), and
the placement rules that read it."""

import json

import pytest

from twin.cli import main
from twin.config.load import load_scenario
from twin.errors import InputError

NVL72 = {"nodes": 18, "gpus_per_node": 4, "nvlink_domain_gpus": 72, "gpu": "gb200",
         "host": "grace-tray-host", "intra_node_link": "nvlink5", "nics_per_node": 4}


def scenario(cluster: dict, **placement):
    return load_scenario({"model": "qwen3-4b", "cluster": cluster, "placement": placement})


def refused(cluster: dict, **placement) -> InputError:
    with pytest.raises(InputError) as err:
        scenario(cluster, **placement)
    return err.value


def test_a_domain_spans_whole_nodes_only():
    err = refused({**NVL72, "nvlink_domain_gpus": 70})
    assert err.field == "cluster.nvlink_domain_gpus" and err.value == 70
    assert "multiple of cluster.gpus_per_node (4)" in err.allowed
    assert refused({**NVL72, "nvlink_domain_gpus": 0}).field == "cluster.nvlink_domain_gpus"
    assert refused({**NVL72, "nvlink_domain_gpus": 4096}).field == "cluster.nvlink_domain_gpus"


def test_a_mesh_link_cannot_join_nodes():
    err = refused({"nodes": 2, "gpus_per_node": 8, "gpu": "mi300x", "intra_node_link": "xgmi-mi300",
                   "nvlink_domain_gpus": 16})
    assert err.field == "cluster.nvlink_domain_gpus" and "xgmi-mi300" in err.problem
    assert scenario({"nodes": 2, "gpus_per_node": 8, "gpu": "mi300x", "intra_node_link": "xgmi-mi300",
                     "nvlink_domain_gpus": 8}).cluster.domain_gpus == 8


def test_engine_tp_may_span_trays_inside_a_domain():
    assert scenario(NVL72, rollout={"tp": 8}).placement.rollout.tp == 8  # two whole trays
    assert scenario(NVL72, rollout={"tp": 6}).placement.rollout.tp == 6  # 12 engines tile the rack
    err = refused({**NVL72, "nvlink_domain_gpus": None}, rollout={"tp": 6})
    assert err.field == "placement.rollout.tp" and "1..4" in err.allowed
    err = refused(NVL72, mode="disaggregated", rollout={"gpus": 30, "tp": 10}, trainer={"gpus": 40})
    # tp 10: neither inside a tray, nor whole trays, nor a divisor of the rack
    assert err.field == "placement.rollout.tp" and "divisor of cluster.nvlink_domain_gpus (72)" in err.allowed


def test_the_domain_shows_in_the_report_only_when_set(capsys):
    assert main(["check", "grpo-gb200-nvl72", "--resolved", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert '"nvlink_domain_gpus": 72' in text
    assert main(["check", "grpo-8b-disaggregated", "--resolved", "--json", "-"]) == 0
    assert "nvlink_domain_gpus" not in capsys.readouterr().out


@pytest.mark.parametrize("override", ["cluster.nvlink_domain_gpus=70", "cluster.nvlink_domain_gpus=true",
                                      "cluster.nvlink_domain_gpus=-4"])
def test_bad_domains_are_one_line_exit_2(override, capsys):
    assert main(["check", "grpo-gb200-nvl72", "--set", override]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("twin: error: ")
    assert override.split("=")[0] in err


def test_a_mesh_link_on_a_domain_of_trays_is_one_line_exit_2(capsys):
    assert main(["check", "grpo-gb200-nvl72", "--set", "cluster.intra_node_link=xgmi-mi300"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cluster.nvlink_domain_gpus" in err
