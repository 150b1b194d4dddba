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


def config(name: str, attn: str):
    """(model class, config) of architecture `name` with attention
    implementation `attn` ("sdpa" or "eager")."""
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
    }
    cls, mk = table[name]
    cfg = mk()
    cfg._attn_implementation = attn
    return cls, cfg


NAMES = ("gpt2", "bert", "roberta", "distilbert", "llama", "mistral", "qwen2", "opt")


def build(name: str, attn: str = "sdpa", seed: int = 0):
    """A tiny model of architecture `name` in train mode."""
    cls, cfg = config(name, attn)
    torch.manual_seed(seed)
    model = cls(cfg)
    model.train()
    return model


# OPT builds position ids as cumsum(attention_mask): of an int64 mask, a graph
# input that trnc may only assume within +-2^23, the prefix sums cannot be
# proven to stay within the +-2^24 that NeuronCore engines compute exactly
# (docs/dtypes.md), so trnc refuses it; a bool mask bounds them by the length.
MASK_DTYPE = {"opt": torch.bool}


def batch(name: str, seed: int = 1, batch_size: int = 2, seq: int = 13):
    """input_ids, attention_mask (the second row left-padded by 3 tokens) and
    labels (-100 at the padding) for a language-modelling loss."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (batch_size, seq), generator=g)
    mask = torch.ones(batch_size, seq, dtype=torch.long)
    mask[1:, :3] = 0
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask.to(MASK_DTYPE.get(name, torch.long)), labels
