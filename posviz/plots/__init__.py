"""Plotly helpers shared by the book's chapters.

Chapters build their figures from these so that every slider behaves the same way in the static
web page (no kernel), in JupyterLab, Colab and Binder. Chapter-specific figure modules live
beside this file.
"""

from ._sliders import Step, heatmap_trace, slider_figure

__all__ = ["Step", "heatmap_trace", "slider_figure"]
