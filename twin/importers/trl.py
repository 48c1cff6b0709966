"""TRL: a GRPOConfig as YAML or JSON, or the example scripts' command line (``accelerate
launch ... grpo.py --flag value``), with the process count from an accelerate config file,
``--num_processes``, or one 8-GPU node when neither is given."""

from __future__ import annotations

from pathlib import Path

from twin.config.io import read_mapping
from twin.errors import InputError
from twin.importers import shell
from twin.importers.base import (WEIGHTY, Builder, Imported, Importer, Knobs, ceil_div, named_file, resolve_model, scalar,
                                 workload)

VERSION = "0.19 (trl.GRPOConfig field names and defaults, 2025)"
DEFAULT_PROCESSES = 8
ACCELERATE_KEYS = {"distributed_type", "compute_environment", "num_processes", "num_machines"}
VLLM_MODES = {"colocate": "colocate", "server": "server"}


def read(paths: list[Path]) -> tuple[Knobs, Knobs, Knobs]:
    """(GRPOConfig knobs, accelerate knobs, vllm-serve knobs)."""
    cfg, acc, serve = Knobs(), Knobs(), Knobs()
    for path in paths:
        if path.suffix in (".yaml", ".yml", ".json"):
            data = read_mapping(path)
            (acc if ACCELERATE_KEYS & set(data) else cfg).put_tree(data, path)
            continue
        script = shell.read(path)
        found = False
        for words in script.commands:
            if words[:2] == ["trl", "vllm-serve"]:
                for key, value in shell.flags(words[2:]):
                    serve.put(key.replace("-", "_"), _value(value), path)
                continue
            module, args = shell.python_module(words)
            if module is None:
                continue
            found = True
            launcher = words[: words.index(module)] if module in words else []
            given = shell.flags(launcher)  # the command line wins over the config file it names
            for key, value in sorted(given, key=lambda kv: kv[0].replace("-", "_") != "config_file"):
                key = key.replace("-", "_")
                if key == "config_file":
                    conf = named_file(str(value), path, "--config_file", "--config_file")
                    if conf is None:
                        raise InputError("--config_file names a file that is not there", file=path,
                                         field="--config_file", value=value, allowed="an existing accelerate config "
                                         "beside the script or in the current folder (run from where you launch)")
                    acc.put_tree(read_mapping(conf), conf)
                elif key in ("num_processes", "num_machines"):
                    acc.put(key, _value(value), path)
            for key, value in shell.flags(args):
                key = key.replace("-", "_")
                if key == "config":  # TrlParser's --config: a YAML of the same fields
                    conf = named_file(str(value), path, "--config", "--config")
                    if conf is None:
                        raise InputError("--config names a file that is not there", file=path, field="--config",
                                         value=value, allowed="an existing GRPOConfig YAML beside the script or in "
                                         "the current folder")
                    cfg.put_tree(read_mapping(conf), conf)
                else:
                    cfg.drop(key)
                    cfg.put(key, _value(value), path)
        if not found and not serve.keys():
            raise InputError("the script runs no Python training script", file=path,
                             allowed="accelerate launch [--config_file ACC.yaml] grpo.py --flag value ... "
                             "(or python grpo.py ...), a GRPOConfig YAML/JSON, or an accelerate config")
    return cfg, acc, serve


def _value(value):
    return scalar(value) if isinstance(value, str) and shell.UNSET not in value else value


def run(paths: list[Path], model_given: bool) -> Imported:
    k, acc, serve = read(paths)
    b = Builder(k)
    model_key = "model_name_or_path"
    b.set("framework", "trl")  # the stack's profile: framework_profiles/trl.yaml
    b.set("model", resolve_model(k, model_key, model_given, [p.parent for p in paths], b), model_key)
    procs, use_vllm, mode = placement(k, acc, serve, b)
    gen_batch = batches(k, b, procs, use_vllm)
    max_prompt = k.int_("max_prompt_length", 512)
    max_completion = k.int_("max_completion_length", 256)
    workload(b, max_prompt, max_completion, ("max_prompt_length",), ("max_completion_length",))
    if not use_vllm:  # HF generate prefills the whole padded batch in one forward
        b.set("placement.rollout.max_num_batched_tokens", (gen_batch // procs) * max_prompt, "max_prompt_length")
    b.set("placement.trainer.recompute", k.bool_("gradient_checkpointing", False), "gradient_checkpointing")
    per_device = k.int_("per_device_train_batch_size", 8)
    b.set("placement.trainer.micro_batch_tokens", per_device * (max_prompt + max_completion), "per_device_train_batch_size")
    sharding(acc, b, mode)
    acc.mark("compute_environment", "machine_rank", "main_training_function", "rdzv_backend", "same_network",
             "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "use_cpu", "debug", "main_process_ip", "main_process_port")
    unused = k.unused() + [f"accelerate:{x}" for x in acc.unused()] + [f"vllm-serve:{x}" for x in serve.unused()]
    unused.sort(key=lambda x: (not WEIGHTY.search(x), x))
    return Imported("trl", VERSION, [str(p) for p in paths], b.data, unused, b.notes, b.provenance)




def placement(k: Knobs, acc: Knobs, serve: Knobs, b: Builder) -> tuple[int, bool, str | None]:
    """Training processes, vLLM colocated or as a server (its GPUs), nodes; (processes,
    use_vllm, vllm_mode)."""
    procs = acc.int_("num_processes", None)
    machines = acc.int_("num_machines", 1)
    use_vllm = k.bool_("use_vllm", False)
    mode = k.choice("vllm_mode", VLLM_MODES, "server") if use_vllm else None
    if procs is None:
        server = serve.int_("tensor_parallel_size", 1) * serve.int_("data_parallel_size", 1) if mode == "server" else 0
        procs = max(DEFAULT_PROCESSES - server, 1)
        b.note(f"{procs} training processes (one 8-GPU node{', the server on the others' if server else ''}): no "
               "accelerate config or --num_processes given")
    per_node = ceil_div(procs, machines)  # the training processes, one GPU each
    if use_vllm and mode == "server":
        tp = serve.int_("tensor_parallel_size", 1)
        dp = serve.int_("data_parallel_size", 1)
        if not serve.keys():
            b.note("the trl vllm-serve server: one GPU (tp 1, dp 1); give its command in a script to read its sizes")
        rollout = tp * dp
        b.set("placement.mode", "disaggregated", "vllm_mode")
        b.set("placement.rollout.gpus", rollout)
        b.set("placement.rollout.tp", tp)
        b.set("placement.trainer.gpus", procs)
        if machines == 1:  # the server beside the training processes on one machine
            per_node, nodes = procs + rollout, 1
            b.note("the vLLM server runs on the training machine's other GPUs")
        else:  # the server on nodes of its own, as large as the training ones
            nodes = machines + ceil_div(rollout, per_node)
            b.note("the vLLM server runs on nodes of its own")
        b.set("cluster.nodes", nodes)
        b.set("placement.rollout.gpu_memory_utilization", serve.float_("gpu_memory_utilization", 0.9, high=1.0))
        # vllm_gpu_memory_utilization / vllm_tensor_parallel_size are the colocated engine's: listed as not used
    else:
        b.set("placement.mode", "colocated")
        b.set("cluster.nodes", machines)
        if use_vllm:
            b.set("placement.rollout.tp", k.int_("vllm_tensor_parallel_size", 1), "vllm_tensor_parallel_size")
            b.set("placement.rollout.gpu_memory_utilization", k.float_("vllm_gpu_memory_utilization", 0.3, high=1.0),
                  "vllm_gpu_memory_utilization")
        else:
            b.set("placement.rollout.engine", "hf_generate", "use_vllm")
            b.note("without use_vllm TRL generates with HF generate (eager, a cache grown by concatenation): "
                   "one static padded batch per process of its share of the generation batch")
    b.set("cluster.gpus_per_node", per_node)
    b.blame("placement.rollout.gpus", "vllm_tensor_parallel_size")
    if use_vllm:
        b.set("placement.rollout.scheduling", "synchronous")
        b.note("the vLLM engine schedules synchronously (vLLM V1 of 2025)")
    return procs, use_vllm, mode


def batches(k: Knobs, b: Builder, procs: int, use_vllm: bool) -> int:
    """The generation batch, groups and optimizer steps; returns the generation batch."""
    per_device = k.int_("per_device_train_batch_size", 8)
    accum = k.int_("gradient_accumulation_steps", 1)
    gens = k.int_("num_generations", 8)
    global_batch = per_device * procs
    gen_batch = k.int_("generation_batch_size", None)
    steps = k.int_("steps_per_generation", None)
    if gen_batch is None:
        gen_batch = global_batch * (steps or accum)
    elif gen_batch % global_batch:
        raise InputError("generation_batch_size must be a multiple of per_device_train_batch_size × processes",
                         file=k.file("generation_batch_size"), field="generation_batch_size", value=gen_batch,
                         allowed=f"a multiple of {global_batch}")
    steps = gen_batch // global_batch
    if not use_vllm:  # each process generates its share of the generation batch in one generate call
        local = gen_batch // procs
        b.set("placement.rollout.max_num_seqs", local, "generation_batch_size", "per_device_train_batch_size",
              "steps_per_generation")
    if gen_batch % gens:
        raise InputError("a generation batch must hold whole groups", file=k.file("num_generations"),
                         field="num_generations", value=gens, allowed=f"a divisor of the generation batch {gen_batch}")
    if steps % accum:
        raise InputError("a generation's micro-batches must make whole optimizer steps",
                         file=k.file("gradient_accumulation_steps"), field="gradient_accumulation_steps", value=accum,
                         allowed=f"a divisor of steps_per_generation = {steps}")
    b.set("algorithm.name", "grpo")
    b.set("algorithm.prompts_per_step", gen_batch // gens, "generation_batch_size", "per_device_train_batch_size")
    b.set("algorithm.responses_per_prompt", gens, "num_generations")
    b.set("algorithm.minibatches", steps // accum, "steps_per_generation", "gradient_accumulation_steps")
    b.set("algorithm.ppo_epochs", k.int_("num_iterations", 1), "num_iterations")
    beta = k.float_("beta", 0.0)
    b.set("algorithm.reference", beta > 0, "beta")
    return gen_batch


def sharding(acc: Knobs, b: Builder, mode: str | None) -> None:
    """The accelerate config's DeepSpeed stage and offload, or FSDP, or DDP."""
    kind = str(acc.str_("distributed_type", "MULTI_GPU")).upper()
    if kind == "DEEPSPEED":
        zero = acc.int_("deepspeed_config.zero_stage", 2, low=0)
        b.set("placement.trainer.zero_stage", min(zero, 3))
        if mode != "server":
            b.set("placement.trainer.offload_optimizer", acc.str_("deepspeed_config.offload_optimizer_device", "none") == "cpu")
            b.set("placement.trainer.offload_params", acc.str_("deepspeed_config.offload_param_device", "none") == "cpu")
    elif kind == "FSDP":
        b.set("placement.trainer.zero_stage", 3)
    else:
        b.set("placement.trainer.zero_stage", 0)


IMPORTER = Importer("trl", "TRL", VERSION,
                    "a GRPOConfig YAML/JSON, or a script running accelerate launch ... grpo.py --flag value "
                    "(with an accelerate config file and a trl vllm-serve command where used)", run)
