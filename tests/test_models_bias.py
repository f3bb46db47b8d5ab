"""posviz.models.bias (and families_other): ALiBi, T5 and learned-table cards against transformers.

BLOOM's ``build_alibi_tensor`` and its unpadded shortcut, MPT's ``build_mpt_alibi_tensor`` as
``MptAttention`` slices it, Falcon's ALiBi path through ``FalconAttention``'s eager softmax, T5's
``compute_bias`` and which blocks own the table, OPT's ``OPTLearnedPositionalEmbedding`` and the
position ids GPT-2 and BERT look up; seeded random configs and masks.
"""

from __future__ import annotations

import importlib
import math
import random

import pytest
import torch

import posviz
from posviz.models import mpt_alibi_slopes, position_card

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
transformers.logging.set_verbosity_error()

SEEDS = range(5)


def _mod(name: str):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def _left_padded(rng: random.Random, batch: int, length: int) -> torch.Tensor:
    mask = torch.ones(batch, length, dtype=torch.long)
    for b in range(batch):
        mask[b, : rng.randrange(0, length // 2 + 1)] = 0
    return mask


def _causal(q: int, k: int) -> torch.Tensor:
    return torch.ones(q, k, dtype=torch.bool).tril(k - q)


@pytest.mark.parametrize("seed", SEEDS)
def test_bloom_alibi_matches_build_alibi_tensor(seed):
    rng = random.Random(f"bloom-{seed}")
    heads, length = rng.randint(1, 16), rng.randint(2, 12)
    config = transformers.BloomConfig(n_head=heads, hidden_size=heads * 4, n_layer=1)
    card = position_card(config)
    assert card.method == "alibi" and card == position_card(config.to_dict())
    mod = _mod("bloom")
    mask = _left_padded(rng, 2, length)
    want = mod.build_alibi_tensor(mask, heads, torch.float32).view(2, heads, 1, length)
    got = card.bias(3, length, attention_mask=mask)
    assert got.shape == (2, heads, 3, length)
    torch.testing.assert_close(got, want.expand_as(got), atol=1e-6, rtol=1e-6)
    # BloomModel without padding: slopes * arange(kv_length)
    unpadded = mod._get_alibi_slopes(heads, "cpu")[:, None, None] * torch.arange(length)
    torch.testing.assert_close(card.bias(length, length)[0, :, 0], unpadded[:, 0], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_row_constant_alibi_equals_distance_alibi_after_a_causal_softmax(seed):
    rng = random.Random(f"rows-{seed}")
    heads, length = rng.randint(1, 12), rng.randint(2, 16)
    card = position_card({"model_type": "bloom", "n_head": heads, "n_layer": 2, "hidden_size": 8 * heads})
    scores = torch.randn(heads, length, length, dtype=torch.float64)
    masked = torch.where(_causal(length, length), 0.0, -math.inf).double()
    native = torch.softmax(scores + card.bias(length, dtype=torch.float64)[0] + masked, -1)
    distance = torch.softmax(scores + card.bias(length, form="distance", dtype=torch.float64)[0] + masked, -1)
    torch.testing.assert_close(native, distance, atol=1e-12, rtol=1e-12)
    assert not torch.allclose(card.bias(length)[0], card.bias(length, form="distance")[0])  # the values differ


@pytest.mark.parametrize("seed", SEEDS)
def test_mpt_alibi_matches_build_mpt_alibi_tensor(seed):
    rng = random.Random(f"mpt-{seed}")
    heads, bias_max, max_len = rng.randint(1, 16), rng.choice((8, 4, 16, 6)), rng.choice((16, 32))
    config = transformers.MptConfig(n_heads=heads, d_model=heads * 4, n_layers=1, max_seq_len=max_len,
                                    attn_config={"alibi": True, "alibi_bias_max": bias_max})
    card = position_card(config)
    assert card.alibi.alibi_bias_max == bias_max and card == position_card(config.to_dict())
    built = _mod("mpt").build_mpt_alibi_tensor(heads, max_len, bias_max)  # MptModel builds it for max_seq_len
    for q_len, k_len in ((1, max_len), (3, 7), (max_len, max_len)):
        want = built[:, max(0, built.size(1) - q_len):, max(0, built.size(2) - k_len):]  # MptAttention's slice
        torch.testing.assert_close(card.bias(q_len, k_len)[0], want.expand(heads, q_len, k_len), atol=1e-6, rtol=1e-6)


def test_mpt_slopes_with_bias_max_8_are_press_slopes():
    for heads in range(1, 33):
        torch.testing.assert_close(mpt_alibi_slopes(heads, 8.0, dtype=torch.float64),
                                   posviz.alibi_slopes(heads, dtype=torch.float64), atol=0, rtol=1e-14)
    assert not torch.allclose(mpt_alibi_slopes(8, 4.0), posviz.alibi_slopes(8))


def _falcon_queries_and_keys(layer: torch.nn.Module, hidden: torch.Tensor, heads: int) -> tuple[torch.Tensor, ...]:
    """A Falcon (not multi-query, not the new decoder architecture) layer's q and k, [b, heads, s, hd]:
    ``query_key_value``'s output is laid out [..., heads, 3, head_dim], each head's query, key and
    value side by side (``FalconAttention``'s split in every transformers release)."""
    fused = layer.self_attention.query_key_value(layer.input_layernorm(hidden))
    fused = fused.unflatten(-1, (heads, 3, -1))
    return fused[..., 0, :].transpose(1, 2), fused[..., 1, :].transpose(1, 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_falcon_alibi_through_its_eager_softmax(seed):
    """``FalconModel``'s attention probabilities (eager, left padding) are softmax(q k^T / sqrt(d) + the
    card's bias) over the keys a query may see. Through the model's public forward: transformers 5
    moved the ALiBi bias from ``FalconAttention``'s arguments into the model's attention mask."""
    rng = random.Random(f"falcon-alibi-{seed}")
    # 9..15 heads: slopes 2^(-k/2) that bfloat16 rounds, products with more bits than bfloat16 keeps
    heads, hd, length = (3, 12, 10, 15, 14)[seed], rng.choice((4, 8)), rng.randint(8, 16)
    config = transformers.FalconConfig(
        hidden_size=heads * hd, num_attention_heads=heads, num_hidden_layers=1, alibi=True, multi_query=False,
        new_decoder_architecture=False, parallel_attn=True, bias=False, vocab_size=16,
    )
    config._attn_implementation = "eager"
    card = position_card(config)
    assert card.method == "alibi" and card.alibi.bias_scaled and card == position_card(config.to_dict())
    mask = _left_padded(rng, 2, length)
    model = transformers.FalconModel(config).eval()
    hidden = torch.randn(2, length, config.hidden_size)
    with torch.no_grad():
        probs = model(inputs_embeds=hidden, attention_mask=mask, output_attentions=True).attentions[0]
        q, k = _falcon_queries_and_keys(model.h[0], hidden, heads)
    allowed = _causal(length, length)[None, None] & mask[:, None, None, :].bool()
    additive = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
    bias = card.bias(length, attention_mask=mask)
    mine = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + bias + additive, dim=-1)
    torch.testing.assert_close(mine, probs, atol=1e-6, rtol=1e-5)
    without = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + additive, dim=-1)
    assert not torch.allclose(without, probs, atol=1e-4)  # the bias shows in these probabilities


@pytest.mark.parametrize("heads", (3, 9, 12, 16))
def test_falcon_alibi_values_are_its_bfloat16_products(heads):
    config = transformers.FalconConfig(hidden_size=heads * 4, num_attention_heads=heads, num_hidden_layers=1,
                                       alibi=True)
    card = position_card(config)
    mask = _left_padded(random.Random(heads), 2, 300)  # keys past 256: bfloat16 rounds the positions too
    mask[0] = 1  # one row without padding reaches key 299
    want = _mod("falcon").build_alibi_tensor(mask, heads, torch.float32).view(2, heads, 1, 300) / math.sqrt(4)
    torch.testing.assert_close(card.bias(1, 300, attention_mask=mask), want, atol=0, rtol=0)


@pytest.mark.parametrize("seed", SEEDS)
def test_t5_bias_matches_compute_bias_and_the_first_block_owns_it(seed):
    rng = random.Random(f"t5-{seed}")
    buckets = rng.choice((8, 16, 32))
    distance = rng.choice((buckets, 64, 128))
    config = transformers.T5Config(d_model=16, d_kv=4, num_heads=rng.randint(1, 4), d_ff=8, num_layers=3,
                                   num_decoder_layers=2, relative_attention_num_buckets=buckets,
                                   relative_attention_max_distance=distance, vocab_size=10)
    card = position_card(config)
    assert card == position_card(config.to_dict())
    model = transformers.T5Model(config).eval()
    for stack_name in ("encoder", "decoder"):
        stack = getattr(model, stack_name)
        owners = [i for i, block in enumerate(stack.block) if block.layer[0].SelfAttention.has_relative_attention_bias]
        assert owners == [card.t5.owner_layers[stack_name]]
        attn = stack.block[owners[0]].layer[0].SelfAttention
        for q_len, k_len, past in ((5, 5, 0), (1, 9, 8), (4, 200, 196)):
            with torch.no_grad():
                want = attn.compute_bias(q_len, k_len, past_seen_tokens=past)
            got = card.bias(q_len, k_len, table=attn.relative_attention_bias.weight, stack=stack_name,
                            past_length=past)
            torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("seed", SEEDS)
def test_opt_positions_come_from_the_mask_plus_two(seed):
    rng = random.Random(f"opt-{seed}")
    length, past = rng.randint(2, 12), rng.choice((0, 0, 3))
    config = transformers.OPTConfig(hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
                                    max_position_embeddings=32, word_embed_proj_dim=8, ffn_dim=8)
    card = position_card(config)
    assert card.learned.offset == 2 and card.learned.rows == 34 and card == position_card(config.to_dict())
    table = _mod("opt").OPTLearnedPositionalEmbedding(32, 8)
    mask = _left_padded(rng, 3, length + past)
    with torch.no_grad():
        want = table(mask, cache_length=past)
    rows = card.positions(mask, past_length=past)
    torch.testing.assert_close(table.weight[rows], want, atol=0, rtol=0)
    forgotten = rows - 2  # the bug: looking OPT's table up without the offset
    assert not torch.equal(table.weight[forgotten], want)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", ("gpt2", "bert"))
def test_gpt2_and_bert_positions_ignore_padding(family, seed):
    rng = random.Random(f"{family}-{seed}")
    heads, rows = rng.choice((1, 2, 4)), rng.choice((8, 16, 32))
    if family == "gpt2":
        config = transformers.GPT2Config(n_embd=4 * heads, n_head=heads, n_layer=1, n_positions=rows, vocab_size=10)
        model, table = transformers.GPT2Model(config).eval(), "wpe"
    else:
        config = transformers.BertConfig(hidden_size=4 * heads, num_attention_heads=heads, num_hidden_layers=1,
                                         intermediate_size=8, max_position_embeddings=rows, vocab_size=10)
        model, table = transformers.BertModel(config).eval(), "embeddings.position_embeddings"
    card = position_card(config)
    assert card.method == "learned" and card.learned.offset == 0 and card == position_card(config.to_dict())
    seen = {}
    model.get_submodule(table).register_forward_pre_hook(lambda m, args: seen.update(ids=args[0]))
    mask = _left_padded(rng, 2, 7)
    with torch.no_grad():
        model(input_ids=torch.randint(0, 10, (2, 7)), attention_mask=mask)
    rows = card.positions(mask)
    assert rows.shape == (2, 7)
    torch.testing.assert_close(rows, seen["ids"].expand_as(rows))
    if family == "bert":
        emb = model.embeddings
        with torch.no_grad():
            out = emb(input_ids=torch.zeros(1, 3, dtype=torch.long), cache_length=4)
            ref = (emb.word_embeddings.weight[0] + emb.token_type_embeddings.weight[0]
                   + emb.position_embeddings.weight[card.positions(seq_len=3, past_length=4)])
        torch.testing.assert_close(out, emb.LayerNorm(ref))


@pytest.mark.parametrize("seed", range(3))
def test_marian_sinusoidal_table_in_halves(seed):
    rng = random.Random(f"marian-{seed}")
    rows, dim = rng.choice((16, 40)), rng.choice((8, 12, 32))
    config = transformers.MarianConfig(d_model=dim, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                       decoder_attention_heads=2, max_position_embeddings=rows, vocab_size=10,
                                       scale_embedding=bool(seed % 2))
    card = position_card(config)
    assert card.method == "sinusoidal" and card == position_card(config.to_dict())
    embed = _mod("marian").MarianSinusoidalPositionalEmbedding(rows, dim)
    weight = embed.create_weight()
    torch.testing.assert_close(card.table(), weight, atol=1e-6, rtol=0)
    assert not torch.allclose(posviz.sinusoidal_encoding(rows, dim), weight)  # Vaswani's interleaved columns
    embed.weight.data.copy_(weight)
    past, seq = rng.randrange(0, rows // 2), rng.randint(1, rows // 2)
    with torch.no_grad():
        want = embed((2, seq), cache_length=past)
    torch.testing.assert_close(card.table()[card.positions(seq_len=seq, past_length=past)[0]], want, atol=1e-6, rtol=0)
    assert card.sinusoidal.embed_scale == (dim**0.5 if seed % 2 else 1.0)
