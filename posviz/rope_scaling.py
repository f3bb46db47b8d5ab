r"""RoPE context-extension rules: how released models rescale the frequency ladder.

A model trained on contexts up to :math:`L` (``original_max_position_embeddings``) is run at
:math:`s = L'/L` times that length (``factor``). Each rule replaces the ladder
:math:`\theta_i = b^{-2i/d}` (:func:`posviz.rope_frequencies`) by a new one :math:`\theta'_i`;
positions, layouts and the rotation stay as they were. :func:`posviz.rope_frequencies` takes
the rule as a mapping in the form of a ``transformers`` config's ``rope_parameters`` (or the
older ``rope_scaling``), and its result equals ``transformers``' own ``inv_freq`` (tests compare
them on many random configs). The rules, with :math:`r_i = L/\lambda_i = L\theta_i/2\pi` the
number of turns pair :math:`i` makes over the original context:

- **linear** (position interpolation, PI; Chen et al., 2023):
  :math:`\theta'_i = \theta_i / s`, the same as dividing every position by :math:`s`.
- **NTK-aware** (bloc97, 2023; :func:`ntk_aware_base`): a new base
  :math:`b' = b\,s^{d/(d-2)}`, chosen so that the slowest pair is interpolated by exactly
  :math:`s` while the fastest is left alone.
- **dynamic** NTK (emozilla, 2023): NTK-aware with a factor that grows with the sequence,
  :math:`s_{\text{eff}} = s\,\ell/L_{\max} - (s - 1)` for a sequence of :math:`\ell > L_{\max}`
  tokens (``max_position_embeddings``), and the plain ladder up to :math:`L_{\max}`.
- **yarn** (Peng et al., 2024; :func:`yarn_ramp`, :func:`yarn_mscale`): "NTK-by-parts" and a
  temperature. Pairs that turn more than :math:`\beta_{\text{fast}}` (32) times over :math:`L`
  keep :math:`\theta_i`, pairs that turn fewer than :math:`\beta_{\text{slow}}` (1) times are
  interpolated to :math:`\theta_i/s`, a linear ramp in the pair index in between; cos and sin
  are multiplied by :math:`0.1\ln s + 1`.
- **llama3** (Meta's Llama 3.1 code; Grattafiori et al., 2024; :func:`llama3_ramp`): the same by-parts idea with the
  ramp linear in :math:`r_i` between ``low_freq_factor`` (1) and ``high_freq_factor`` (4) turns.
- **longrope** (Ding et al., 2024; Phi-3): one searched rescale factor per pair,
  :math:`\theta'_i = \theta_i/\lambda_i`, from ``short_factor`` up to :math:`L` and
  ``long_factor`` beyond it; cos and sin are multiplied by
  :math:`\sqrt{1 + \ln s / \ln L}`.

The attention factors are :func:`posviz.rope_attention_factor`.

**Precision.** posviz computes in float64 and rounds once; ``transformers`` computes the ladder
in float32 (``torch.arange(0, d, 2).float() / d``, then ``base ** exponent``), so the two agree
to a few float32 ulp rather than bit for bit, posviz's being the correctly rounded one. No rule
makes a discontinuous choice on a rounded float: llama3's bands and YaRN's ramp are continuous
at their edges, YaRN's ``floor``/``ceil`` act on the same float64 Python expression as in
``transformers``, and LongRoPE's and dynamic NTK's switches compare integers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ._rope_params import _check_seq_len, parse_scaling
from ._validate import check_int, check_positive, check_real, resolve, round_once

__all__ = [
    "llama3_ramp",
    "ntk_aware_base",
    "rope_attention_factor",
    "yarn_correction_range",
    "yarn_mscale",
    "yarn_ramp",
]

def ntk_aware_base(base: float, factor: float, dim: int) -> float:
    r"""The NTK-aware base for a context :math:`s` times longer (bloc97, 2023):

    .. math:: b' = b \cdot s^{d/(d-2)}

    With :math:`\theta'_i = b'^{-2i/d} = \theta_i\, s^{-2i/(d-2)}`, pair 0 keeps its frequency
    and the slowest pair :math:`i = d/2 - 1` is divided by exactly :math:`s`, as position
    interpolation would; the pairs between are interpolated less the faster they turn. Dynamic
    NTK (``rope_type="dynamic"``) is this base with :math:`s_{\text{eff}} = s\,\ell/L_{\max}
    - (s-1)`; the lab's ``rope-ntk`` row is it with :math:`s = \ell / L_{\text{train}}` (dynamic
    with factor 1).

    Args:
        base: the trained base :math:`b > 0`.
        factor: the context multiplier :math:`s > 0`.
        dim: the rotated dimension :math:`d`, an even integer >= 4 (for :math:`d = 2` the
            exponent is undefined, and the one pair has :math:`\theta_0 = 1` under every base).
    """
    base = check_positive("base", base)
    factor = check_positive("factor", factor)
    dim = check_int("dim", dim, minimum=4)
    if dim % 2:
        raise ValueError(f"dim must be an even integer >= 4 (dimensions come in rotation pairs), got {dim}")
    new = base * factor ** (dim / (dim - 2))
    if not math.isfinite(new):
        raise ValueError(f"base * factor**(dim/(dim-2)) overflows a float for base={base}, factor={factor}")
    return new


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    r"""YaRN's attention temperature term (Peng et al., 2024), as ``transformers``' ``get_mscale``:

    .. math:: \operatorname{mscale}(s, m) = \begin{cases} 0.1\, m \ln s + 1 & s > 1 \\ 1 & s \le 1 \end{cases}

    YaRN multiplies cos and sin by :math:`\sqrt{1/t} = \operatorname{mscale}(s, 1)`, so every
    score :math:`q^\top k` by its square. DeepSeek-V2/V3 configs set ``mscale`` and
    ``mscale_all_dim``: cos and sin then get
    :math:`\operatorname{mscale}(s, m)/\operatorname{mscale}(s, m_{\text{all}})` (1 when the two
    are equal, as in DeepSeek-V3's released config) and the attention's softmax scale
    :math:`1/\sqrt{d_{qk}}` is multiplied by :math:`\operatorname{mscale}(s, m_{\text{all}})^2`
    (``yarn_apply_mscale`` in ``transformers``' DeepSeek code).
    """
    factor = check_positive("factor", factor)
    mscale = check_real("mscale", mscale)
    if factor <= 1:
        return 1.0
    return 0.1 * mscale * math.log(factor) + 1.0


def yarn_correction_range(
    dim: int,
    base: float,
    original_max_position_embeddings: int,
    *,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
) -> tuple[float, float]:
    r"""The pair indices where YaRN's ramp starts and ends, ``(low, high)``.

    Pair :math:`i` turns :math:`r_i = L\,b^{-2i/d}/2\pi` times over the original context
    :math:`L`; the index that turns exactly :math:`\beta` times is

    .. math:: i(\beta) = \frac{d\,\ln\!\big(L / (2\pi\beta)\big)}{2 \ln b},

    and the ramp runs from :math:`\text{low} = \max(\lfloor i(\beta_{\text{fast}})\rfloor, 0)` to
    :math:`\text{high} = \min(\lceil i(\beta_{\text{slow}})\rceil, d - 1)` (no floor and ceil
    when ``truncate=False``, as gpt-oss sets). The upper clamp is :math:`d - 1`, not
    :math:`d/2 - 1`, as in the YaRN reference code and ``transformers``.
    """
    dim = check_int("dim", dim, minimum=2)
    base = check_positive("base", base)
    if base <= 1:
        raise ValueError(f"base must be > 1 for YaRN (its ramp divides by ln(base)), got {base}")
    length = check_int("original_max_position_embeddings", original_max_position_embeddings, minimum=1)
    beta_fast = check_positive("beta_fast", beta_fast)
    beta_slow = check_positive("beta_slow", beta_slow)
    if not isinstance(truncate, bool):
        raise TypeError(f"truncate must be True or False, got {truncate!r}")

    def correction_dim(turns: float) -> float:  # the same expression as transformers' find_correction_dim
        return (dim * math.log(length / (turns * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, dim - 1)


def yarn_ramp(
    dim: int,
    base: float,
    original_max_position_embeddings: int,
    *,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""YaRN's keep weight :math:`\gamma_i` of each pair, shape ``[dim // 2]`` (Peng et al., 2024: NTK-by-parts).

    .. math::

        \gamma_i = 1 - \operatorname{clamp}\!\Big(\frac{i - \text{low}}{\text{high} - \text{low}}, 0, 1\Big),
        \qquad \theta'_i = (1 - \gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i

    with ``(low, high)`` from :func:`yarn_correction_range` (``high`` is nudged by 0.001 when the
    two are equal, as in ``transformers``). :math:`\gamma_i = 1`: pair :math:`i` turns often
    enough over the original context to keep its frequency (extrapolation);
    :math:`\gamma_i = 0`: it is interpolated like PI.
    """
    low, high = yarn_correction_range(
        dim, base, original_max_position_embeddings, beta_fast=beta_fast, beta_slow=beta_slow, truncate=truncate
    )
    if low == high:
        high += 0.001  # transformers' linear_ramp_factor: prevent a zero division
    device, dtype = resolve(device, dtype)
    index = torch.arange(dim // 2, device=device, dtype=torch.float64)
    ramp = torch.clamp((index - low) / (high - low), 0, 1)
    return round_once(1 - ramp, dtype)


def llama3_ramp(
    dim: int,
    base: float,
    original_max_position_embeddings: int,
    low_freq_factor: float,
    high_freq_factor: float,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Llama 3.1's keep weight :math:`\mu_i` of each pair, shape ``[dim // 2]`` (Grattafiori et al., 2024).

    With :math:`\lambda_i = 2\pi/\theta_i` and :math:`r_i = L/\lambda_i` the turns of pair
    :math:`i` over the original context :math:`L`,

    .. math::

        \mu_i = \operatorname{clamp}\!\Big(\frac{r_i - f_{\text{low}}}{f_{\text{high}} - f_{\text{low}}}, 0, 1\Big),
        \qquad \theta'_i = (1 - \mu_i)\,\frac{\theta_i}{s} + \mu_i\,\theta_i :

    wavelengths shorter than :math:`L/f_{\text{high}}` keep :math:`\theta_i`, longer than
    :math:`L/f_{\text{low}}` are divided by :math:`s`, and the "smooth factor" :math:`\mu_i`
    interpolates between (Meta's ``apply_scaling``; ``transformers``' ``_compute_llama3_parameters``
    writes the three bands as ``where`` branches, which this clamp equals). With
    :math:`f_{\text{high}} = f_{\text{low}}` (Llama 4's configs) there is no middle band: a step,
    :math:`\mu_i = 1` for :math:`r_i > f_{\text{low}}`, else 0.
    """
    dim = check_int("dim", dim, minimum=2)
    base = check_positive("base", base)
    length = check_int("original_max_position_embeddings", original_max_position_embeddings, minimum=1)
    low = check_positive("low_freq_factor", low_freq_factor)
    high = check_positive("high_freq_factor", high_freq_factor)
    if high < low:
        raise ValueError(f"high_freq_factor must be >= low_freq_factor, got {high} and {low}")
    device, dtype = resolve(device, dtype)
    theta = base ** -(torch.arange(0, dim, 2, device=device, dtype=torch.float64) / dim)
    turns = length * theta / (2 * math.pi)  # r_i = L / lambda_i
    if high == low:  # no ramp, a step (Llama 4 Scout's config: both 1): keep above f, divide below
        return (turns > low).to(dtype)
    return round_once(torch.clamp((turns - low) / (high - low), 0, 1), dtype)


def scaled_frequencies(theta: torch.Tensor, dim: int, base: float, p: dict, seq_len: int | None) -> torch.Tensor:
    """Apply the parsed rule ``p`` to the float64 ladder ``theta`` (``[dim // 2]``) of ``rope_frequencies``."""
    kind = p["rope_type"]
    if kind == "default":
        return theta
    if kind == "linear":
        return theta / p["factor"]  # theta_i / s
    if kind == "dynamic":
        length = max(seq_len or 0, p["max_position_embeddings"])  # transformers: max(seq_len, max_pos)
        factor = p["factor"] * length / p["max_position_embeddings"] - (p["factor"] - 1)  # s_eff
        if dim == 2 or factor == 1:
            return theta  # theta_0 = 1 under every base; s_eff = 1: the plain ladder
        exponent = torch.arange(0, dim, 2, device=theta.device, dtype=theta.dtype) / dim
        return ntk_aware_base(base, factor, dim) ** -exponent  # b'^(-2i/d)
    if kind == "yarn":
        gamma = yarn_ramp(
            dim, base, p["original_max_position_embeddings"], beta_fast=p["beta_fast"], beta_slow=p["beta_slow"],
            truncate=p["truncate"], device=theta.device, dtype=theta.dtype,
        )
        return theta / p["factor"] * (1 - gamma) + theta * gamma
    if kind == "llama3":
        mu = llama3_ramp(
            dim, base, p["original_max_position_embeddings"], p["low_freq_factor"], p["high_freq_factor"],
            device=theta.device, dtype=theta.dtype,
        )
        return (1 - mu) * theta / p["factor"] + mu * theta
    # longrope: the long factors past the original context (transformers: seq_len > original)
    long = seq_len is not None and seq_len > p["original_max_position_embeddings"]
    key = "long_factor" if long else "short_factor"
    factors = p[key]
    if len(factors) != dim // 2:
        raise ValueError(
            f"scaling[{key!r}] must have one factor per rotated pair, dim // 2 = {dim // 2}, got {len(factors)}"
        )
    return theta / torch.tensor(factors, device=theta.device, dtype=theta.dtype)  # theta_i / lambda_i


def rope_attention_factor(scaling: Mapping | None, *, seq_len: int | None = None) -> float:
    r"""The factor a RoPE scaling rule multiplies cos and sin by (``transformers``' ``attention_scaling``).

    Every score :math:`q^\top k` between rotated coordinates is multiplied by its square.

    - ``yarn`` (Peng et al., 2024): ``attention_factor`` when the mapping sets it; else, with
      DeepSeek's ``mscale`` and ``mscale_all_dim`` both set (non-zero),
      :math:`\operatorname{mscale}(s, m)/\operatorname{mscale}(s, m_{\text{all}})`; else
      :math:`\operatorname{mscale}(s, 1) = 0.1 \ln s + 1` (:func:`yarn_mscale`; 1 for
      :math:`s \le 1`). A missing ``factor`` is ``max_position_embeddings /
      original_max_position_embeddings``, as in ``transformers``.
    - ``longrope`` (Ding et al., 2024):

      .. math:: \sqrt{1 + \frac{\ln s}{\ln L}} \quad (s > 1), \qquad 1 \quad (s \le 1),

      with :math:`L` = ``original_max_position_embeddings`` and :math:`s` = ``factor`` or, when
      absent, ``max_position_embeddings / original_max_position_embeddings`` (Phi-3's configs);
      ``attention_factor`` overrides it.
    - every other rule, and ``scaling=None``: 1.

    ``seq_len`` is checked and accepted so that one set of arguments serves this function and
    :func:`posviz.rope_frequencies`; no rule's factor depends on it (LongRoPE scales the short
    and the long factors alike, and ``transformers`` computes the factor once).
    """
    p = parse_scaling(scaling)
    _check_seq_len(seq_len)
    if p is None or p["rope_type"] not in ("yarn", "longrope"):
        return 1.0
    if p["attention_factor"] is not None:
        return p["attention_factor"]
    original = p["original_max_position_embeddings"]
    factor = p["factor"]
    if factor is None:  # longrope without factor: Phi-3's max_position_embeddings / original
        if p["max_position_embeddings"] is None:
            raise ValueError(
                "LongRoPE's attention factor reads scaling['factor'] or, when it is absent, "
                "scaling['max_position_embeddings'] / scaling['original_max_position_embeddings']: add one"
            )
        factor = p["max_position_embeddings"] / original
    if p["rope_type"] == "yarn":
        if p["mscale"] and p["mscale_all_dim"]:
            return float(yarn_mscale(factor, p["mscale"]) / yarn_mscale(factor, p["mscale_all_dim"]))
        return yarn_mscale(factor)
    if factor <= 1.0:
        return 1.0
    if original < 2:
        raise ValueError(
            "LongRoPE's attention factor divides by ln(original_max_position_embeddings): it must be >= 2, "
            f"got {original}"
        )
    return math.sqrt(1 + math.log(factor) / math.log(original))
