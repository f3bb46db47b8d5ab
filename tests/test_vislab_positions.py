"""posviz.vislab.positions and model: each plug-in's hook shapes and values (against the library call
it must make), the class token's treatment, the model at every grid, paired initialisation."""

from __future__ import annotations

import pytest
import torch

import posviz
from posviz.vislab.model import TinyViT, ViTConfig
from posviz.vislab.positions import METHODS, POSITION_PARAMETERS, make_position
from posviz.vislab.task import make_examples, stream

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GRID, DIM, LAYERS, HEADS = 8, 32, 2, 2
HS = DIM // HEADS


def plugin(method: str, seed: int = 0):
    p = make_position(method, grid=GRID, dim=DIM, n_layer=LAYERS, n_head=HEADS)
    p.reset_parameters(torch.Generator().manual_seed(seed))
    return p


def qk(h: int, w: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, HEADS, 1 + h * w, HS, generator=g), torch.randn(3, HEADS, 1 + h * w, HS, generator=g)


CPU, F32 = torch.device("cpu"), torch.float32


def test_none_does_nothing() -> None:
    p = plugin("none")
    q, k = qk(8, 8)
    assert p.add_to_input(8, 8, CPU, F32) is None and p.bias(8, 8, 0, CPU, F32) is None
    q2, k2 = p.rotate(q, k, 8, 8, 0)
    assert q2 is q and k2 is k


@pytest.mark.parametrize("h, w", [(8, 8), (12, 12), (16, 16), (6, 10)])
def test_learned_table_is_the_training_table_resized_with_its_class_row_kept(h: int, w: int) -> None:
    p = plugin("learned")
    table = p.table.detach()
    assert table.shape == (1 + GRID * GRID, DIM)
    out = p.add_to_input(h, w, CPU, F32)
    assert out.shape == (1 + h * w, DIM)
    assert torch.equal(out[0], table[0])  # the class row, untouched
    want = posviz.resize_position_table(table, (h, w), cls_tokens=1)
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    if (h, w) == (GRID, GRID):
        assert torch.equal(out, table)


def test_learned_table_starts_as_the_sincos_table() -> None:
    assert torch.equal(plugin("learned").table.detach(), posviz.sinusoidal_encoding_2d(GRID, GRID, DIM, cls_token=True))


def test_learned_table_gets_gradients_through_the_resize() -> None:
    p = plugin("learned")
    p.add_to_input(16, 16, CPU, F32).sum().backward()
    assert p.table.grad is not None and p.table.grad.abs().sum() > 0


@pytest.mark.parametrize("h, w", [(8, 8), (16, 16), (5, 7)])
def test_sincos_is_maes_table_with_its_zero_class_row(h: int, w: int) -> None:
    out = plugin("sincos-2d").add_to_input(h, w, CPU, F32)
    assert out.shape == (1 + h * w, DIM)
    assert torch.equal(out, posviz.sinusoidal_encoding_2d(h, w, DIM, cls_token=True))
    assert torch.count_nonzero(out[0]) == 0


@pytest.mark.parametrize("h, w", [(8, 8), (16, 16)])
def test_axial_rope_rotates_the_patches_only_with_base_100(h: int, w: int) -> None:
    q, k = qk(h, w)
    q2, k2 = plugin("rope-axial").rotate(q, k, h, w, 0)
    assert q2.shape == q.shape and k2.shape == k.shape
    assert torch.equal(q2[..., 0, :], q[..., 0, :]) and torch.equal(k2[..., 0, :], k[..., 0, :])  # class token
    positions = posviz.patch_positions(h, w)
    torch.testing.assert_close(q2[..., 1:, :], posviz.axial_rope_2d(q[..., 1:, :], positions, base=100.0))
    torch.testing.assert_close(k2[..., 1:, :], posviz.axial_rope_2d(k[..., 1:, :], positions, base=100.0))


def test_mixed_rope_has_one_learnable_module_per_layer_drawn_as_the_paper() -> None:
    p = plugin("rope-mixed", seed=5)
    assert len(p.layers) == LAYERS
    want = posviz.mixed_rope_frequencies(HEADS, HS, 10.0, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(p.layers[0].frequencies.detach(), want)
    assert not torch.equal(p.layers[0].frequencies, p.layers[1].frequencies)  # each layer its own draw
    q, k = qk(12, 12)
    for layer in range(LAYERS):
        q2, k2 = p.rotate(q, k, 12, 12, layer)
        assert torch.equal(q2[..., 0, :], q[..., 0, :])
        positions = posviz.patch_positions(12, 12)
        torch.testing.assert_close(k2[..., 1:, :], p.layers[layer](k[..., 1:, :], positions))
        torch.testing.assert_close(q2[..., 1:, :], p.layers[layer](q[..., 1:, :], positions))


@pytest.mark.parametrize("h, w", [(8, 8), (12, 12), (16, 16)])
def test_swin_bias_is_the_clipped_table_with_a_zero_class_row_and_column(h: int, w: int) -> None:
    p = plugin("swin-bias")
    for layer in range(LAYERS):
        bias = p.bias(h, w, layer, CPU, F32)
        assert bias.shape == (HEADS, 1 + h * w, 1 + h * w)
        assert torch.count_nonzero(bias[:, 0, :]) == 0 and torch.count_nonzero(bias[:, :, 0]) == 0
        torch.testing.assert_close(bias[:, 1:, 1:], p.layers[layer]((h, w)))
    bias = p.bias(h, w, 0, CPU, F32)[:, 1:, 1:]
    # offsets past the trained +-7 read the clipped row: patch (0, 0) -> (0, w-1) as (0, 0) -> (0, 7)
    assert torch.equal(bias[:, 0, w - 1], p.layers[0](GRID)[:, 0, GRID - 1])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("grid", [8, 12, 16])
def test_every_model_runs_at_every_grid(method: str, grid: int) -> None:
    model = TinyViT(ViTConfig(method=method, n_embd=DIM, n_head=HEADS, n_layer=LAYERS), seed=0)
    tokens, _, _, _ = make_examples(4, grid, stream("heldout", grid))
    logits = model(tokens)
    assert logits.shape == (4, 4) and torch.isfinite(logits).all()


def test_without_positions_the_model_cannot_tell_where_a_patch_is() -> None:
    """``none`` is permutation-invariant over the patches (so the task is at chance for it); every
    other method is not."""
    tokens, _, _, _ = make_examples(6, 8, stream("heldout", 8))
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(0))
    shuffled = tokens.reshape(6, 64)[:, perm].reshape(6, 8, 8)
    for method in METHODS:
        model = TinyViT(ViTConfig(method=method, n_embd=DIM, n_head=HEADS, n_layer=LAYERS), seed=1)
        with torch.no_grad():
            if method in ("learned", "swin-bias"):  # std 0.02 -> 1: make the position parameters matter
                for p in model.position.parameters():
                    p.mul_(50.0)
            same = torch.allclose(model(tokens), model(shuffled), atol=1e-5)
        assert same == (method == "none"), method


def test_one_seed_gives_every_method_the_same_shared_weights_and_two_seeds_differ() -> None:
    def shared(method: str, seed: int) -> dict:
        m = TinyViT(ViTConfig(method=method, n_embd=DIM, n_head=HEADS, n_layer=LAYERS), seed=seed)
        return {n: p.detach().clone() for n, p in m.shared_parameters()}

    ref = shared("none", 3)
    for method in METHODS[1:]:
        other = shared(method, 3)
        assert other.keys() == ref.keys()
        assert all(torch.equal(other[n], ref[n]) for n in ref), method
    assert not torch.equal(shared("none", 4)["wte.weight"], ref["wte.weight"])


def test_position_parameters_are_the_plugins_and_are_seeded() -> None:
    for method in METHODS:
        m = TinyViT(ViTConfig(method=method, n_embd=DIM, n_head=HEADS, n_layer=LAYERS), seed=2)
        has = any(True for _ in m.position.parameters())
        assert has == (method in POSITION_PARAMETERS), method
        if has:
            again = TinyViT(ViTConfig(method=method, n_embd=DIM, n_head=HEADS, n_layer=LAYERS), seed=2)
            assert all(torch.equal(a, b) for a, b in zip(m.position.parameters(), again.position.parameters()))


def test_bad_shapes_name_the_flag() -> None:
    with pytest.raises(ValueError, match="--heads 3 must divide --d-model 64"):
        ViTConfig(n_head=3)
    with pytest.raises(ValueError, match="multiple of 4"):
        ViTConfig(n_embd=24, n_head=4)
    with pytest.raises(ValueError, match="--train-grid"):
        ViTConfig(grid=1)
    with pytest.raises(ValueError, match="method"):
        ViTConfig(method="alibi")
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, H, W\)"):
        TinyViT(ViTConfig())(torch.zeros(2, 64, dtype=torch.long))
