"""A tiny randomly initialised chat model, built offline, for smoke runs and tests.

The tokenizer is a byte-level BPE trained here on the bundled task sources and the prompt
templates (so kernel code tokenises sensibly), with a plain chat template; the model is a
two-layer Qwen2 with random weights. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

TINY = "tiny-random"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL = ["<|end|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>"]


def corpus() -> list[str]:
    from importlib import resources

    from cudal1.tasks import load_suite

    texts = [t.source for t in load_suite("bundled", validate=False).tasks]
    root = resources.files("cudal1.policy") / "templates"
    texts += [(root / name).read_text() for name in ("system.md", "contrastive.md", "feedback.md")]
    return texts


def build_tiny(out_dir: Path, seed: int = 0, vocab_size: int = 2048) -> Path:
    """Write a tokenizer and a random 2-layer model to out_dir (once); return the path."""
    if (out_dir / "config.json").is_file():
        return out_dir
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus(), trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|end|>", pad_token="<|pad|>")
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def resolve_model(name: str, cache_dir: Path) -> str:
    """`tiny-random` builds the tiny model under cache_dir; anything else is a HF path/name."""
    if name == TINY:
        return str(build_tiny(cache_dir / TINY))
    return name
