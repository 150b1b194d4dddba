"""Tiny random Hugging Face transformers models for the model suite: 2
layers, hidden size 64, 4 heads, vocabulary 100, dropout 0, built from
configs (no downloads), and the batch each one trains on."""

from __future__ import annotations

import torch

VOCAB = 100


def _common(T, **kw):
    base = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64)
    base.update(kw)
    return base


def config(name: str, attn: str | None):
    """(model class, config) of architecture `name` with attention
    implementation `attn` ("eager", "sdpa"), or None for the model's default
    (sdpa where transformers supports it: every model here but GPT-Neo, which
    has eager attention only, and ResNet, which has none)."""
    import transformers as T

    nodrop = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    table = {
        "gpt2": (T.GPT2LMHeadModel, lambda: T.GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
        "bert": (T.BertForMaskedLM, lambda: T.BertConfig(**_common(T, **nodrop))),
        "roberta": (T.RobertaForMaskedLM, lambda: T.RobertaConfig(
            **_common(T, **nodrop), pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        "distilbert": (T.DistilBertForMaskedLM, lambda: T.DistilBertConfig(
            n_layers=2, dim=64, n_heads=4, hidden_dim=128, vocab_size=VOCAB,
            max_position_embeddings=64, dropout=0.0, attention_dropout=0.0)),
        "llama": (T.LlamaForCausalLM, lambda: T.LlamaConfig(
            **_common(T), num_key_value_heads=2, bos_token_id=0, eos_token_id=0)),
        "mistral": (T.MistralForCausalLM, lambda: T.MistralConfig(
            **_common(T), num_key_value_heads=2, bos_token_id=0, eos_token_id=0)),
        "qwen2": (T.Qwen2ForCausalLM, lambda: T.Qwen2Config(
            **_common(T), num_key_value_heads=2, bos_token_id=0, eos_token_id=0)),
        "opt": (T.OPTForCausalLM, lambda: T.OPTConfig(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4, ffn_dim=128,
            vocab_size=VOCAB, max_position_embeddings=64, word_embed_proj_dim=64, dropout=0.0,
            attention_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        "gpt_neo": (T.GPTNeoForCausalLM, lambda: T.GPTNeoConfig(
            vocab_size=VOCAB, hidden_size=64, num_layers=2, num_heads=4,
            attention_types=[[["global", "local"], 1]], max_position_embeddings=64, window_size=8,
            embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0, bos_token_id=0,
            eos_token_id=0)),
        "mixtral": (T.MixtralForCausalLM, lambda: T.MixtralConfig(
            **_common(T), num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
            bos_token_id=0, eos_token_id=0)),
        "gemma": (T.GemmaForCausalLM, lambda: T.GemmaConfig(
            **_common(T), num_key_value_heads=2, head_dim=16, bos_token_id=0, eos_token_id=0,
            pad_token_id=0)),
        "bart": (T.BartForConditionalGeneration, lambda: T.BartConfig(
            vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
            decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
            decoder_start_token_id=2)),
        "whisper": (T.WhisperForConditionalGeneration, lambda: T.WhisperConfig(
            vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
            decoder_ffn_dim=128, max_source_positions=16, max_target_positions=32, dropout=0.0,
            attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=0, suppress_tokens=None,
            begin_suppress_tokens=None)),
        "t5": (T.T5ForConditionalGeneration, lambda: T.T5Config(
            vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
            num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=128,
            dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)),
        "vit": (T.ViTForImageClassification, lambda: T.ViTConfig(
            image_size=16, patch_size=4, num_channels=3, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, num_labels=5, **nodrop)),
        "resnet": (T.ResNetForImageClassification, lambda: T.ResNetConfig(
            num_channels=3, embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
            num_labels=5)),
    }
    cls, mk = table[name]
    cfg = mk()
    if attn is not None:
        cfg._attn_implementation = attn
    return cls, cfg


NAMES = ("gpt2", "bert", "roberta", "distilbert", "llama", "mistral", "qwen2", "opt", "gpt_neo",
         "gemma", "mixtral", "bart", "t5", "whisper", "vit", "resnet")
# what each model trains on (batch() builds it)
KIND = {"bart": "seq2seq", "t5": "seq2seq", "whisper": "audio", "vit": "image", "resnet": "image"}


def build(name: str, attn: str | None = None, seed: int = 0):
    """A tiny model of architecture `name` in train mode."""
    cls, cfg = config(name, attn)
    torch.manual_seed(seed)
    model = cls(cfg)
    model.train()
    return model


# OPT builds position ids as cumsum(attention_mask): a scan, which goes
# through fp32 (exact within +-2^24). Of an int64 mask, a graph input that
# trnc may only assume within +-2^23 at the narrowest input range it compiles
# for (docs/dtypes.md), the prefix sums cannot be proven exact, so trnc
# refuses it; a bool mask bounds them by the length.
MASK_DTYPE = {"opt": torch.bool}


def batch(name: str, seed: int = 1, batch_size: int = 2, seq: int = 13) -> dict:
    """Keyword inputs of one training step with a loss: for language models
    input_ids, attention_mask (the second row left-padded by 3 tokens) and
    labels (-100 at the padding); seq2seq models take 7 target labels;
    Whisper 16 mel bins x 32 frames; image models 16 x 16 RGB and a class."""
    g = torch.Generator().manual_seed(seed)
    kind = KIND.get(name, "lm")
    if kind == "image":
        return dict(pixel_values=torch.randn(batch_size, 3, 16, 16, generator=g),
                    labels=torch.randint(0, 5, (batch_size,), generator=g))
    targets = torch.randint(3, VOCAB, (batch_size, 7), generator=g)
    if kind == "audio":
        return dict(input_features=torch.randn(batch_size, 16, 32, generator=g), labels=targets)
    ids = torch.randint(3, VOCAB, (batch_size, seq), generator=g)
    mask = torch.ones(batch_size, seq, dtype=torch.long)
    mask[1:, :3] = 0
    labels = targets if kind == "seq2seq" else ids.masked_fill(mask == 0, -100)
    return dict(input_ids=ids, attention_mask=mask.to(MASK_DTYPE.get(name, torch.long)),
                labels=labels)
