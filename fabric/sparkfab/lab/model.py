"""The lab's model: a small Llama-architecture model with random weights and a locally trained
tokenizer, made here (a lab has nothing to download). Self-contained: the lab runs this file
with the Python of its vLLM environment, so the model is written by the transformers vLLM reads it
with; tests import `make` directly.

Nothing is downloaded: the byte-level BPE tokenizer is trained on a few sentences here, the
weights come from a fixed seed. The model talks nonsense, but a real server loads it, tokenizes
with it, streams its tokens and counts them, which is what `bench` and `battery` are tested
against. The generation config has no end-of-sequence token, so the model always writes
max_tokens tokens (transformers serve does not take vLLM's ignore_eos).

    python fabric/sparkfab/lab/model.py DIR [--hidden 1024 --heads 16 --kv-heads 4 --layers 2 --vocab 448]
"""

from __future__ import annotations

import sys
from pathlib import Path

CORPUS = [
    "The ring all-reduce sums partial results around a circle of machines.",
    "Each machine sends one segment to the next and adds what it receives.",
    "Prefill moves large blocks in bursts; decode moves small ones.",
    " ".join(str(i) for i in range(1, 101)),
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def make(
    out: Path, seed: int = 0, hidden: int = 64, heads: int = 4, kv_heads: int = 2, layers: int = 2, vocab: int = 0
) -> Path:
    """A model in `out`; vLLM's CPU attention needs head_dim >= 32 (hidden / heads), e.g. 128, 2, 1.
    `vocab` (at least the tokenizer's) sizes the embedding so that tensor parallelism can split it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|bos|>", "<|eos|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 3, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>", pad_token="<|pad|>")  # type: ignore[no-untyped-call]
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=max(vocab, len(fast)),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=16384,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(out)
    gen = GenerationConfig(bos_token_id=fast.bos_token_id, pad_token_id=fast.pad_token_id, do_sample=False)  # type: ignore[no-untyped-call]
    gen.save_pretrained(out)
    return out


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="model.py", description="write the lab's model into DIR")
    p.add_argument("dir", type=Path)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=0, help="embedding rows (at least the tokenizer's vocabulary)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.hidden % a.heads or a.hidden // a.heads < 32 or a.heads % a.kv_heads:
        p.error(
            "hidden/heads must be a whole head size of at least 32 (vLLM's CPU attention), heads a multiple of kv-heads"
        )
    print(make(a.dir, a.seed, a.hidden, a.heads, a.kv_heads, a.layers, a.vocab))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
