"""What the i18n tests share (test_i18n.py, test_i18n_chapters.py): the texts a reader sees in
a figure, a JSON copy, and the explorers and figures of every chapter (test_figure_notation.py
imports these from test_i18n).
"""

from __future__ import annotations


def _texts(value, key=""):
    """The strings a reader sees in a figure dict (titles, names, labels, hover text, ticks)."""
    if isinstance(value, str):
        if key in {"text", "name", "label", "prefix", "hovertemplate", "title", "hovertext", "ticktext"}:
            yield value
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(v, k if k not in ("args", "steps", "buttons", "annotations") else key or k)


def json_copy(value):
    import json

    return json.loads(json.dumps(value))


def _explorers():
    from posviz.learned import WindowMaxConfig
    from posviz.widgets.alibi import alibi_explorer
    from posviz.widgets.attention import attention_explorer
    from posviz.widgets.learned import learned_explorer
    from posviz.widgets.models import models_explorer
    from posviz.widgets.relative import relative_explorer
    from posviz.widgets.rope import rope_explorer
    from posviz.widgets.sinusoidal import sinusoidal_explorer
    from posviz.widgets.vision import vision_explorer

    small = WindowMaxConfig(steps=20, checkpoints=(0, 10, 20), probe=16)  # as tests/test_widgets_learned.py
    return {
        "alibi": alibi_explorer,
        "attention": attention_explorer,
        "learned": lambda: learned_explorer(max_lens=(8, 12), dims=(4, 6), seeds=(0,), config=small, max_len=12, dim=6),
        "models": models_explorer,
        "relative": relative_explorer,
        "rope": rope_explorer,
        "sinusoidal": sinusoidal_explorer,
        "vision": vision_explorer,
    }


def _every_chapter_figure():
    """Each figure a chapter draws, as the chapter calls it (the learned chapter's on a small run)."""
    from posviz.learned import WindowMaxConfig, train_window_max
    from posviz.plots import alibi, attention, learned, relative, rope, sinusoidal

    run = train_window_max(WindowMaxConfig(max_len=12, dim=8, steps=20, checkpoints=(0, 10, 20), probe=16))
    figures = {
        "alibi-slopes": lambda: alibi.alibi_slopes_figure(range(2, 17), active_heads=12),
        "alibi-bias": lambda: alibi.alibi_bias_figure(num_heads=8, length=12),
        "alibi-window": lambda: alibi.alibi_window_figure(num_heads=8, lengths=(32, 256, 2048), mass=0.9),
        "attention-scale": attention.scale_figure,
        "attention-permutation": attention.permutation_figure,
        "learned-cost": learned.learned_cost_figure,
        "learned-table": lambda: learned.learned_table_figure(run),
        "learned-similarity": lambda: learned.learned_similarity_figure(run),
        "learned-attention": lambda: learned.learned_attention_figure(run),
        "relative-clipped": lambda: relative.clipped_positions_figure(length=16),
        "relative-xl": relative.transformer_xl_terms_figure,
        "relative-t5-buckets": relative.t5_bucket_figure,
        "relative-t5-attention": relative.t5_attention_figure,
        "rope-rotation": lambda: rope.rope_rotation_figure(dim=128, base=10000.0, pairs=(0, 8, 16, 63), offset=4),
        "rope-angle": lambda: rope.rope_angle_figure(dim=128, bases=(100.0, 10000.0, 500000.0)),
        "rope-scores": lambda: rope.rope_score_matrix_figure(dim=64, length=40),
        "rope-decay": rope.rope_decay_figure,
        "sinusoidal-heatmap": sinusoidal.sinusoidal_heatmap_figure,
        "sinusoidal-waves": sinusoidal.sinusoidal_waves_figure,
        "sinusoidal-binary": sinusoidal.binary_counter_figure,
        "sinusoidal-similarity": sinusoidal.sinusoidal_similarity_figure,
        "sinusoidal-extrapolation": sinusoidal.sinusoidal_extrapolation_figure,
    }
    import json

    return {name: json.loads(make().to_json()) for name, make in figures.items()}
