"""posviz._validate: the device/dtype rule, error kinds and the memory guard, seen from the public API."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz
from posviz import _validate
from posviz._validate import check_fits_in_memory

BUILDERS = {
    "sinusoidal_encoding": lambda **kw: posviz.sinusoidal_encoding(8, 4, **kw),
    "rope_frequencies": lambda **kw: posviz.rope_frequencies(8, **kw),
    "wavelengths": lambda **kw: posviz.wavelengths(8, **kw),
    "rope_rotation_matrix": lambda **kw: posviz.rope_rotation_matrix(3, 4, **kw),
    "sinusoidal_shift_matrix": lambda **kw: posviz.sinusoidal_shift_matrix(3, 4, **kw),
    "sinusoidal_phase_coverage": lambda **kw: posviz.sinusoidal_phase_coverage(8, 4, **kw),
    "alibi_slopes": lambda **kw: posviz.alibi_slopes(4, **kw),
    "alibi_bias": lambda **kw: posviz.alibi_bias(2, 5, **kw),
}


@pytest.fixture
def restore_defaults():
    device, dtype = torch.get_default_device(), torch.get_default_dtype()
    yield
    torch.set_default_device(device)
    torch.set_default_dtype(dtype)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builders_follow_torchs_default_device_and_dtype(name, restore_defaults):
    out = BUILDERS[name]()
    assert out.device.type == "cpu" and out.dtype == torch.float32  # torch's own defaults
    torch.set_default_dtype(torch.float64)
    assert BUILDERS[name]().dtype == torch.float64
    torch.set_default_device("meta")  # a device other than the CPU, present on every machine
    assert BUILDERS[name]().device.type == "meta"
    assert BUILDERS[name](device="cpu", dtype=torch.float16).dtype == torch.float16


def test_builders_never_pick_cuda_on_their_own(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    assert posviz.default_device().type == "cpu"
    assert posviz.alibi_bias(2, 4).device.type == "cpu"
    assert posviz.relative_positions(3).device.type == "cpu"
    assert posviz.rope_layout_permutation(4).device.type == "cpu"


def test_integer_inputs_give_the_default_dtype(restore_defaults):
    offsets = torch.arange(4)
    for fn in (lambda: posviz.sinusoidal_offset_similarity(offsets, 8), lambda: posviz.rope_angles(offsets, 8),
               lambda: posviz.rope_mean_partial_sum(offsets, 8), lambda: posviz.rope_angles(3, 8),
               lambda: posviz.alibi_effective_window(0.5), lambda: posviz.alibi_window_mass(0.5, 3),
               lambda: posviz.alibi_distance_weights(0.5, 4), lambda: posviz.binary_counter_waves(offsets, 3)):
        assert fn().dtype == torch.float32
        torch.set_default_dtype(torch.float64)
        assert fn().dtype == torch.float64
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.sinusoidal_encoding(4, 4, base="x"), TypeError, "base must be a real number > 0"),
        (lambda: posviz.sinusoidal_encoding(4, 4, base=-1.0), ValueError, "base must be a finite number > 0"),
        (lambda: posviz.sinusoidal_encoding(4.0, 4), TypeError, "length must be an integer"),
        (lambda: posviz.sinusoidal_encoding(-1, 4), ValueError, "length must be >= 0, got -1"),
        (lambda: posviz.sinusoidal_encoding(4, 3), ValueError, "dim must be a positive even integer"),
        (lambda: posviz.sinusoidal_encoding(4, 4, dtype=torch.int64), TypeError, "dtype must be a floating"),
        (lambda: posviz.sinusoidal_encoding(4, 4, device="not-a-device"), ValueError, "device must be"),
        (lambda: posviz.alibi_bias(0, 4), ValueError, "num_heads must be >= 1"),
        (lambda: posviz.alibi_bias(True, 4), TypeError, "num_heads must be an integer"),
        (lambda: posviz.alibi_bias(2, torch.tensor(True)), TypeError, "query_len must be an integer"),
        (lambda: posviz.rope_scores(torch.randn(3, 4), torch.randn(3, 4), scale="x"), TypeError,
         "scale must be a real number"),
        (lambda: posviz.rope_scores(torch.randn(3, 4), torch.randn(3, 4).double()), TypeError, "same dtype"),
        (lambda: posviz.rope_relative_score(torch.randn(4), torch.randn(4).double(), torch.arange(3)), TypeError,
         "same dtype"),
        (lambda: posviz.rope_rotation_matrix("1", 4), TypeError, "position must be a real number"),
        (lambda: posviz.alibi_window_mass(0.5, 1.5), TypeError, "window must be an integer"),
    ],
)
def test_wrong_kind_is_type_error_wrong_value_is_value_error(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def _meminfo(tmp_path, monkeypatch, free_kib: int, available_kib: int) -> None:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal: {4 * available_kib} kB\nMemFree: {free_kib} kB\nMemAvailable: {available_kib} kB\n")
    monkeypatch.setattr(_validate, "MEMINFO", str(path))


def test_memory_guard_uses_available_not_free_memory(tmp_path, monkeypatch):
    # 16 GiB of float32 with 21.9 GB available but only 1 GB free (the rest is page cache)
    _meminfo(tmp_path, monkeypatch, free_kib=10**6, available_kib=int(21.9e9 / 1024))
    assert check_fits_in_memory("ALiBi bias", (16, 16384, 16384), torch.float32, torch.device("cpu")) == 16 * 2**30


def test_memory_guard_counts_working_buffers(tmp_path, monkeypatch):
    _meminfo(tmp_path, monkeypatch, free_kib=10**6, available_kib=3 * 2**20)  # 3 GiB
    shape = (2**28,)  # 1 GiB of float32
    check_fits_in_memory("table", shape, torch.float32, torch.device("cpu"))
    with pytest.raises(ValueError, match=r"1 x torch.float32 \+ 2 x torch.float64 per element\) needs 5.0 GiB"):
        check_fits_in_memory("table", shape, torch.float32, torch.device("cpu"), work=((torch.float64, 2),))


def test_memory_guard_refuses_before_allocating_and_names_the_fix(tmp_path, monkeypatch):
    _meminfo(tmp_path, monkeypatch, free_kib=10**6, available_kib=2**20)  # 1 GiB
    with pytest.raises(ValueError, match=r"ALiBi bias of shape \[8, 20000, 20000\].* needs .* GiB but only 1.0 GiB "
                                         r"is available on cpu; use a shorter length or fewer heads"):
        posviz.alibi_bias(8, 20000)
    with pytest.raises(ValueError, match="sinusoidal table"):
        posviz.sinusoidal_encoding(10**6, 1024, dtype=torch.float64)


def test_memory_guard_has_no_opinion_on_devices_it_cannot_measure():
    assert check_fits_in_memory("x", (10**12,), torch.float32, torch.device("meta")) == 4 * 10**12


@pytest.mark.parametrize("scores", ["rope_scores", "attention_scores"])
def test_q_and_k_on_different_devices_name_both(scores: str) -> None:
    """One check (``check_qk``) serves every function that takes queries and keys."""
    fn = getattr(posviz, scores)
    q = torch.randn(3, 4)
    k = torch.randn(3, 4, device="meta")
    with pytest.raises(ValueError, match=r"q and k must be on the same device, got q: cpu and k: meta"):
        fn(q, k)


# --- rounding once, devices that are not there, numbers past float64 ----------------------------


def _rne(x: float, bits: int) -> float:
    """x rounded to ``bits`` significant bits, to nearest, ties to even (exact integer arithmetic)."""
    from fractions import Fraction

    if x == 0 or not math.isfinite(x):
        return x
    f, e = math.frexp(x)
    scaled = Fraction(f) * 2**bits  # exact
    return math.ldexp(round(scaled), e - bits)  # Fraction.__round__: ties to even


@settings(max_examples=300, deadline=None)
@given(
    mantissa=st.integers(2**7, 2**8 - 1),
    exponent=st.integers(-60, 60),
    nudge=st.sampled_from([-(2.0**-30), -(2.0**-45), 0.0, 2.0**-45, 2.0**-30, 2.0**-12]),
    sign=st.sampled_from([1.0, -1.0]),
)
def test_round_once_is_one_rounding_to_nearest_even(mantissa, exponent, nudge, sign):
    """Values at and just beside a bfloat16 / float16 tie (where rounding through float32 goes wrong)."""
    for dtype, bits in ((torch.bfloat16, 8), (torch.float16, 11)):
        tie = math.ldexp(mantissa + 0.5, exponent) if bits == 8 else math.ldexp(mantissa * 8 + 0.5, exponent - 3)
        x = sign * tie * (1 + nudge)
        if dtype == torch.float16 and not 2.0**-14 <= abs(x) < 65504:
            continue  # float16's normal range
        got = _validate.round_once(torch.tensor([x], dtype=torch.float64), dtype)
        assert got.dtype == dtype and got.item() == _rne(x, bits), (x, dtype)


def test_round_once_keeps_autograd_and_special_values():
    x = torch.tensor([1 + 2**-8 + 2**-30, -0.0, math.inf, -math.inf, math.nan], dtype=torch.float64,
                     requires_grad=True)
    y = _validate.round_once(x, torch.bfloat16)
    assert y[0].item() == 1 + 2**-7  # torch's own cast gives 1.0 here
    assert x.detach().to(torch.bfloat16)[0].item() == 1.0
    assert math.copysign(1, y[1].item()) == -1 and y[2].item() == math.inf and y[3].item() == -math.inf
    assert math.isnan(y[4].item())
    y.float().sum().backward()
    assert torch.equal(x.grad, torch.ones(5, dtype=torch.float64))
    same = torch.randn(10, dtype=torch.float64)
    assert torch.equal(_validate.round_once(same, torch.float32), same.float())


def test_devices_the_machine_lacks_are_named(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device 'cuda' is not available: this machine has no CUDA device"):
        posviz.alibi_bias(2, 3, device="cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match=r"'cuda:5' is not available: this machine has 2 CUDA device\(s\)"):
        posviz.relative_positions(3, device="cuda:5")


def test_numbers_past_float64_are_named():
    from fractions import Fraction

    for value in (10**400, -(10**400), Fraction(10**400, 3)):
        with pytest.raises(ValueError, match="base must be a finite number > 0, got a value"):
            _validate.check_real("base", value, positive=True)
    assert _validate.check_positive("base", 10**300) == 1e300
