"""Make a real TRL log: GRPO on this CPU with a tiny random-weight model, saved as trainer_state.json.

``twin fit`` reads TRL's ``trainer_state.json`` (``log_history`` with ``completions/*`` and
``step_time``); this tool makes one from an actual :class:`trl.GRPOTrainer` run, so that the
reader and the fit are checked on a file TRL wrote (tests/importers/logs/fixtures/trl-real/). Nothing is
downloaded: the model is a small Qwen2 built from transformers' config class with random
weights, the tokenizer a character-level one built here with ``tokenizers``. With random
weights every token is about equally likely, the end-of-sequence token included, so
completions end at natural (geometric) lengths and a few reach ``--max-completion``.

Requirements (not a twin dependency; a tool): ``pip install trl transformers "torch==2.13.0"``
(tried with trl 1.16.0, transformers 5.24.0, torch 2.13.0+cpu). Takes about a minute on 2
CPU cores at the defaults::

    python tools/make_trl_log.py --out tests/importers/logs/fixtures/trl-real/trainer_state.json

Also writes ``run.json`` beside ``--out``: the run's settings, the model's shape and the
versions, which tests/importers/logs/test_trl_real.py reads to describe the same run to the twin.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

CHARS = "abcdefghijklmnopqrstuvwxyz0123456789 .,?+=-"
MODEL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=176, max_position_embeddings=512)


def tokenizer():
    """A character-level tokenizer: one id per character, <pad>, <eos>, <unk>."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{c: i + 3 for i, c in enumerate(CHARS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>", padding_side="left")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where trainer_state.json goes")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--prompts", type=int, default=4, help="prompts per step")
    p.add_argument("--generations", type=int, default=4, help="completions per prompt")
    p.add_argument("--max-completion", type=int, default=96)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import datasets
    import torch
    import transformers
    import trl
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    tok = tokenizer()
    config = Qwen2Config(vocab_size=len(tok), bos_token_id=None, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id, tie_word_embeddings=True, **MODEL)
    model = Qwen2ForCausalLM(config)
    prompts = [f"what is {a} + {b} ? answer:" for a in range(10) for b in range(10)]
    data = datasets.Dataset.from_dict({"prompt": prompts})

    def reward(completions, **kwargs):
        # Trivial: the share of digits in the completion (the run is about timings and lengths).
        return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]

    with tempfile.TemporaryDirectory() as tmp:
        cfg = GRPOConfig(
            output_dir=tmp, max_steps=args.steps, per_device_train_batch_size=args.prompts * args.generations,
            num_generations=args.generations, max_completion_length=args.max_completion,
            learning_rate=1e-4, logging_steps=1, report_to="none", save_strategy="no", use_cpu=True,
            bf16=False, seed=args.seed, temperature=1.0, beta=0.0, dataloader_num_workers=0,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=cfg, train_dataset=data,
                              processing_class=tok)
        start = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - start
        args.out.parent.mkdir(parents=True, exist_ok=True)
        trainer.state.save_to_json(str(args.out))
    run = {
        "command": "python tools/make_trl_log.py " + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
        "steps": args.steps, "prompts_per_step": args.prompts, "responses_per_prompt": args.generations,
        "max_completion_length": args.max_completion, "seed": args.seed, "wall_s": round(wall, 2),
        "prompt_tokens": sorted({len(tok(p)["input_ids"]) for p in prompts}),
        "model": {"vocab_size": len(tok), **MODEL, "tie_word_embeddings": True},
        "versions": {"trl": trl.__version__, "transformers": transformers.__version__, "torch": torch.__version__,
                     "datasets": datasets.__version__, "python": platform.python_version()},
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
    }
    (args.out.parent / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    print(f"wrote {args.out} ({args.steps} steps in {wall:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
