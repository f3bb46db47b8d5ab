"""posviz.models.released: the released configs as data, each with its source, read by position_card."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import posviz
from posviz.models import RELEASED, position_card, released_config


def test_every_entry_reads_as_a_card_and_names_its_source() -> None:
    for name, entry in RELEASED.items():
        card = position_card(released_config(name))
        assert card.model_type and card.family
        assert entry.name == name and entry.source.startswith(entry.repo + ": ")
        assert "config.json" in entry.source
    assert [n for n, e in RELEASED.items() if e.stand_ins] == ["phi-3-mini-128k"]
    assert "stand-ins of the right length" in RELEASED["phi-3-mini-128k"].source


def test_released_config_is_a_fresh_plain_copy() -> None:
    a = released_config("llama-3.1-8b")
    a["rope_scaling"]["factor"] = 1.0
    assert released_config("llama-3.1-8b")["rope_scaling"]["factor"] == 8.0
    assert isinstance(released_config("smollm3-3b")["no_rope_layers"], list)
    with pytest.raises(TypeError):
        RELEASED["llama-3.1-8b"].config["rope_theta"] = 1.0
    with pytest.raises(ValueError, match="name must be one of .*llama-3.1-8b"):
        released_config("llama-5")
    with pytest.raises(TypeError, match="name must be a str"):
        released_config(3)


def test_same_values_as_the_card_tests() -> None:
    """The card tests' Hub dicts and this module must not drift apart."""
    pytest.importorskip("transformers", reason="tests/test_models_card.py needs transformers")
    path = Path(__file__).with_name("test_models_card.py")
    spec = importlib.util.spec_from_file_location("_card_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shared = set(module.HUB) & set(RELEASED)
    assert len(shared) >= 15
    for name in shared:
        assert released_config(name) == module.HUB[name], name


def test_what_the_chapter_states() -> None:
    cards = {n: position_card(released_config(n)) for n in RELEASED}
    assert cards["llama-3.1-8b"].base() == 500000.0 and cards["llama-3.1-8b"].rope.layout == "half"
    assert (cards["gpt-j-6b"].rope.layout, cards["gpt-j-6b"].rope.rotary_dim, cards["gpt-j-6b"].rope.head_dim) == (
        "interleaved", 64, 256)
    assert cards["pythia-70m"].rope.rotary_dim * 4 == cards["pythia-70m"].rope.head_dim
    assert (cards["gemma-3-4b"].base(0), cards["gemma-3-4b"].base(5)) == (10000.0, 1000000.0)
    assert cards["llama-4-scout"].rope.nope_layers == tuple(range(3, 48, 4))
    assert cards["deepseek-v3"].rope.shared_key_head and cards["deepseek-v3"].rope.rotary_dim == 64
    assert cards["bert-base"].learned.rows == 512 and cards["gpt-2"].learned.rows == 1024


def test_llama4_scout_frequencies_match_transformers() -> None:
    """Scout's config has low_freq_factor == high_freq_factor (a step, no ramp), which transformers
    computes (with a warning) and posviz must accept."""
    transformers = pytest.importorskip("transformers", reason="reference implementation")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    text = released_config("llama-4-scout")["text_config"]
    config = transformers.Llama4TextConfig(**{k: v for k, v in text.items() if k != "model_type"})
    reference, _ = ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    card = position_card(released_config("llama-4-scout"))
    ours = posviz.rope_frequencies(128, card.base(), scaling=card.scaling(), device="cpu", dtype=torch.float64)
    torch.testing.assert_close(ours.float(), reference.float(), rtol=1e-6, atol=0)
    plain = posviz.rope_frequencies(128, 500000.0, device="cpu", dtype=torch.float64)
    kept, divided = ours == plain, torch.isclose(ours, plain / 16)
    assert bool((kept | divided).all()) and kept.any() and divided.any()  # a step: no pair in between
