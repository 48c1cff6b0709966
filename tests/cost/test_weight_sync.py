from twin.runner import plan as plan_of
from twin.cost.weight_sync import weight_sync_cost


def test_broadcast_of_a_72b_model_is_dominated_by_the_gather_not_the_wire():
    s = plan_of({"model": "qwen2.5-72b", "cluster": {"nodes": 4},
                       "placement": {"mode": "disaggregated", "rollout": {"tp": 8}}})
    cost = weight_sync_cost(s)
    assert cost.method == "nccl_broadcast"
    assert cost.gather_convert_s > 5 * cost.wire_s
    assert cost.total_s > cost.gather_convert_s


def test_colocated_reshard_scales_with_model_size():
    small = weight_sync_cost(plan_of({"model": "qwen3-4b"}))
    big = weight_sync_cost(plan_of({"model": "qwen3-32b", "cluster": {"nodes": 2}}))
    assert small.method == "reshard"
    assert big.total_s > 4 * small.total_s


def test_a_slower_network_slows_only_the_wire():
    data = {"model": "qwen2.5-7b", "cluster": {"nodes": 2}, "placement": {"mode": "disaggregated"}}
    fast = weight_sync_cost(plan_of(data))
    slow = weight_sync_cost(plan_of(data, ["cluster.inter_node_link=ib-hdr200", "cluster.nics_per_node=1"]))
    assert slow.wire_s > fast.wire_s
    assert slow.gather_convert_s == fast.gather_convert_s
