"""The figures of *Beyond one dimension*: what each method's heatmap shows, checked against the
formulas written out here, and sliders and menus that change the drawing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from plotly.utils import PlotlyJSONEncoder

from posviz import mrope_position_ids, sinusoidal_encoding_2d
from posviz.plots.vision import (
    METHODS,
    SETTINGS,
    colour_range,
    mrope_ids_figure,
    patch_scores_figure,
    patch_similarity,
    resize_figure,
    swin_stand_in_table,
)

D = int(SETTINGS["dim"])


def encoded(value: object) -> str:
    return json.dumps(value, cls=PlotlyJSONEncoder)


def offsets(grid: int) -> torch.Tensor:
    r, c = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    pos = torch.stack((r.reshape(-1), c.reshape(-1)), -1)
    return pos[:, None, :] - pos[None, :, :]  # query minus key, [T, T, 2]


def offset_spread(S: torch.Tensor, grid: int) -> float:
    delta = offsets(grid)
    key = delta[..., 0] * 1000 + delta[..., 1]
    return max((S[key == v] - S[key == v][0]).abs().max().item() for v in key.unique())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("grid", [5, 12])
def test_the_query_patch_itself(method: str, grid: int) -> None:
    S = patch_similarity(method, grid, train_grid=6)
    assert S.shape == (grid * grid, grid * grid) and S.dtype == torch.float64
    expected = 0.0 if method == "swin-bias" else 1.0  # a row's cosine with itself; a zero offset's bias
    torch.testing.assert_close(S.diagonal(), torch.full((grid * grid,), expected, dtype=torch.float64))


@pytest.mark.parametrize("method", ["sincos-2d", "rope-axial", "rope-mixed", "swin-bias"])
def test_relative_methods_depend_on_the_offset_only(method: str) -> None:
    assert offset_spread(patch_similarity(method, 7, train_grid=4), 7) < 1e-12


def test_a_resized_table_does_not_depend_on_the_offset_only() -> None:
    assert offset_spread(patch_similarity("learned", 12, train_grid=8), 12) > 1e-3


def test_axial_score_is_the_mean_cosine_of_row_and_column_angles() -> None:
    # the formula by hand: pairs j < d/4 turn by r theta_j, the others by c theta_j, theta_j = base^(-4j/d)
    grid, base = 6, SETTINGS["axial_base"]
    theta = base ** (-4 * torch.arange(D // 4, dtype=torch.float64) / D)
    delta = offsets(grid).double()
    angles = torch.cat((delta[..., :1] * theta, delta[..., 1:] * theta), dim=-1)  # [T, T, d/2]
    torch.testing.assert_close(patch_similarity("rope-axial", grid), torch.cos(angles).mean(-1))


def test_axial_is_a_row_part_plus_a_column_part_and_mixed_is_not() -> None:
    grid = 6
    for method, separable in (("rope-axial", True), ("rope-mixed", False)):
        S = patch_similarity(method, grid).reshape(grid, grid, grid, grid)
        q = S[0, 0]  # from patch (0, 0): offsets (-r, -c)
        residual = (q - q[:, :1] - q[:1, :] + q[0, 0]).abs().max().item()
        assert (residual < 1e-12) == separable, (method, residual)


def test_learned_is_resized_and_sincos_is_extended() -> None:
    table = sinusoidal_encoding_2d(8, 8, D, cls_token=True, device="cpu", dtype=torch.float64)
    # at the training grid the stand-in table is the sin-cos table itself
    torch.testing.assert_close(patch_similarity("learned", 8), patch_similarity("sincos-2d", 8))
    # at 16 x 16: bicubic resizing of the patch rows as an image [1, d, 8, 8], written out with torch
    image = table[1:].reshape(1, 8, 8, D).permute(0, 3, 1, 2)
    rows = F.interpolate(image, size=(16, 16), mode="bicubic", align_corners=False).permute(0, 2, 3, 1).reshape(256, D)
    unit = rows / rows.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(patch_similarity("learned", 16, train_grid=8), unit @ unit.T)
    extended = sinusoidal_encoding_2d(16, 16, D, device="cpu", dtype=torch.float64)
    unit = extended / extended.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(patch_similarity("sincos-2d", 16, train_grid=8), unit @ unit.T)
    assert not torch.allclose(patch_similarity("learned", 16, train_grid=8), unit @ unit.T)


def test_swin_clips_offsets_to_the_training_window() -> None:
    grid, train = 12, 5
    S = patch_similarity("swin-bias", grid, train_grid=train)
    clipped = offsets(grid).clamp(-(train - 1), train - 1).double()
    torch.testing.assert_close(S, -clipped.norm(dim=-1) / (train - 1))
    table = swin_stand_in_table(train)
    assert table.shape == ((2 * train - 1) ** 2,) and table[(train - 1) * (2 * train - 1) + train - 1] == 0
    assert table.min().item() == pytest.approx(-math.sqrt(2))


def test_patch_similarity_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        patch_similarity("alibi-2d", 8)
    with pytest.raises((ValueError, TypeError), match="grid"):
        patch_similarity("rope-axial", 0)
    with pytest.raises((ValueError, TypeError), match="train_grid"):
        patch_similarity("learned", 8, train_grid=1)
    with pytest.raises(ValueError, match="queries"):
        patch_scores_figure(4, queries=[16])


def test_patch_figure_slider_moves_the_query_and_the_menu_picks_the_method() -> None:
    fig = patch_scores_figure(4, train_grid=4)
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == 16 and slider.steps[6].label == "(1, 2)"
    assert len(fig.data) == len(METHODS) + 1
    zs = [step.args[0]["z"] for step in slider.steps]
    assert encoded(zs[0]) != encoded(zs[5])  # the slider changes the heatmaps
    marker = slider.steps[6].args[0]["x"][len(METHODS)], slider.steps[6].args[0]["y"][len(METHODS)]
    assert marker == ([2], [1])  # the cross sits on the query patch (col, row)
    z = np.asarray(slider.steps[6].args[0]["z"][METHODS.index("rope-axial")])
    np.testing.assert_allclose(z, patch_similarity("rope-axial", 4)[6].reshape(4, 4).numpy(), atol=0.006)
    (menu,) = fig.layout.updatemenus
    assert menu.type == "dropdown" and len(menu.buttons) == len(METHODS)
    shown = [b.args[0]["visible"] for b in menu.buttons]
    assert all(v[i] and v[-1] and sum(v) == 2 for i, v in enumerate(shown))
    assert not fig.layout.shapes  # no training outline at the training grid


def test_larger_grid_outlines_the_training_grid_and_shares_the_colour_scale() -> None:
    small, big = patch_scores_figure(8), patch_scores_figure(16, train_grid=8)
    (shape,) = big.layout.shapes
    assert (shape.x1, shape.y1) == (7.5, 7.5)
    steps = big.layout.sliders[0].steps
    assert len(steps) == 49  # rows and columns 0, 3, 6, 8 (the middle), 9, 12, 15
    assert steps[big.layout.sliders[0].active].label == "(8, 8)"
    assert tuple(big.layout.xaxis.range) == (-0.5, 15.5) and tuple(big.layout.yaxis.range) == (15.5, -0.5)
    for a, b in zip(small.data[: len(METHODS)], big.data[: len(METHODS)]):
        assert (a.zmin, a.zmax) == (b.zmin, b.zmax)
    for i, method in enumerate(METHODS):
        lo, hi = colour_range(method)
        z = np.asarray([np.asarray(s.args[0]["z"][i]) for s in big.layout.sliders[0].steps])
        assert lo <= z.min() and z.max() <= hi


def test_resize_figure_draws_the_resized_table() -> None:
    fig = resize_figure(8, (4, 16), channel=1)
    steps = fig.layout.sliders[0].steps
    assert [len(s.args[0]["z"][1]) for s in steps] == [4, 16]
    table = sinusoidal_encoding_2d(8, 8, D, cls_token=True, device="cpu", dtype=torch.float64)
    image = table[1:, 1].reshape(1, 1, 8, 8)
    expected = F.interpolate(image, size=(4, 4), mode="bicubic", align_corners=False)[0, 0]
    np.testing.assert_allclose(np.asarray(steps[0].args[0]["z"][1]), expected.numpy(), atol=6e-4)
    with pytest.raises((ValueError, TypeError), match="channel"):
        resize_figure(channel=D)


def test_mrope_figure_draws_the_ids_of_text_image_text() -> None:
    fig = mrope_ids_figure([4, ("image", (1, 6, 8)), 3], spatial_merge_size=2)
    z = np.asarray(fig.data[0].z)
    text = list(range(4))
    # by hand: the image starts at p = 4, token (i, j) gets (4, 4 + i, 4 + j); the text continues at 4 + 4
    t = text + [4] * 12 + [8, 9, 10]
    h = text + [4 + i for i in range(3) for _ in range(4)] + [8, 9, 10]
    w = text + [4 + j for _ in range(3) for j in range(4)] + [8, 9, 10]
    np.testing.assert_array_equal(z, [t, h, w])
    np.testing.assert_array_equal(z, mrope_position_ids([4, ("image", (1, 6, 8)), 3]).numpy())
    assert [a.text for a in fig.layout.annotations] == ["text", "image", "text"]


# per method and seed: accuracy at 8x8, 12x12, 16x16 (made up, so every verdict below is known)
CLAIMS_ACC = {
    "none": [[0.25, 0.25, 0.25], [0.26, 0.25, 0.24], [0.24, 0.26, 0.25]],
    "learned": [[1.00, 0.80, 0.60], [0.99, 0.70, 0.70], [1.00, 0.75, 0.50]],
    "rope-axial": [[1.00, 0.60, 0.40], [1.00, 0.50, 0.45], [1.00, 0.55, 0.42]],
    "rope-mixed": [[1.00, 0.90, 0.62], [1.00, 0.92, 0.58], [1.00, 0.91, 0.66]],
}


@pytest.fixture(scope="module")
def claims_results() -> dict:
    import posviz.vislab.experiment as ex
    from posviz.lab.train import TrainConfig
    from posviz.vislab import VisConfig, run_experiment

    def fake(cfg, method, seed, mult):
        acc = CLAIMS_ACC[method][cfg.seeds.index(seed)]
        return {
            "seed": seed, "position_lr_mult": mult, "accuracy": acc, "loss": [1.0 - a for a in acc],
            "validation_accuracy": acc[0], "validation_loss": 1.0 - acc[0] + (mult or 0) / 1000,
            "final_train_loss": 0.1, "train_seconds": 2.0, "params": 1000, "loss_curve": {"step": [1], "loss": [1.0]},
        }

    cfg = VisConfig(methods=list(CLAIMS_ACC), model={"n_layer": 1, "n_head": 2, "n_embd": 16},
                    train=TrainConfig(steps=2, batch_size=4, warmup_steps=0), mode="test")
    mp = pytest.MonkeyPatch()
    mp.setattr(ex, "train_one", fake)
    try:
        return run_experiment(cfg, progress=False)
    finally:
        mp.undo()


def test_claim_verdicts() -> None:
    from posviz.plots.vision import claim_verdict

    assert claim_verdict(0.1, False) == "agrees" and claim_verdict(-0.1, False) == "disagrees"
    assert claim_verdict(0.3, True) == "inside spread" and claim_verdict(0.3, None) == "one seed"


def test_paper_claims_table_states_each_claim_per_grid(claims_results: dict) -> None:
    from posviz.plots.vision import paper_claims_table

    table = str(paper_claims_table(claims_results))
    lines = table.splitlines()
    assert lines[0] == "| claim (Heo et al., 2024) | at 12×12 | at 16×16 |"
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines[2:]}
    # mixed - axial: +0.36 at 12 (every seed ahead), +0.197 at 16 (every seed ahead)
    mixed_axial = rows["`rope-mixed` > `rope-axial`"]
    assert mixed_axial[0].startswith("+36.0 ± ") and all(": agrees" in cell for cell in mixed_axial)
    # mixed - learned at 16: +0.02, +(-0.12), +0.16 per seed: signs differ, inside the spread
    assert "inside the spread" in rows["`rope-mixed` > `learned`"][1]
    # axial - learned: behind at both grids with every seed
    assert all("disagrees" in cell for cell in rows["`rope-axial` > `learned`"])
    assert rows["`rope-axial` > `learned`"][0].startswith("-20.0 ± ")
