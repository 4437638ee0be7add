"""Compare candidate outputs with reference outputs and say precisely how they differ."""

from __future__ import annotations

import torch


def _unravel(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for dim in reversed(shape):
        index.append(flat_index % dim)
        flat_index //= dim
    return list(reversed(index))


def compare_tensors(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float) -> dict | None:
    """None when `actual` matches `expected` (allclose semantics, NaN only where the reference has NaN);
    otherwise a dict of Mismatch fields (without trial/output_index)."""
    if tuple(actual.shape) != tuple(expected.shape):
        return {"reason": "shape", "detail": f"shape {list(actual.shape)} but expected {list(expected.shape)}"}
    if actual.dtype != expected.dtype:
        return {
            "reason": "dtype",
            "detail": f"dtype {str(actual.dtype).removeprefix('torch.')} but expected "
            f"{str(expected.dtype).removeprefix('torch.')}",
        }
    actual = actual.to(expected.device)
    numel = expected.numel()
    if numel == 0:
        return None
    flat_exp, flat_act = expected.reshape(-1), actual.reshape(-1)
    # in chunks: the float64 temporaries of a GB-sized output would otherwise take several times its size
    for start in range(0, numel, _CHUNK):
        found = _compare_flat(flat_exp[start:start + _CHUNK], flat_act[start:start + _CHUNK], atol, rtol)
        if found is not None:  # the rest only adds to the counts and maxima
            return _mismatch_report(flat_exp, flat_act, tuple(expected.shape), atol, rtol, start)
    return None


_CHUNK = 1 << 24  # elements compared at once


def _widened(exp: torch.Tensor, act: torch.Tensor, atol: float, rtol: float):
    """Both in float64 (complex128), |act - exp|, and which elements are close (allclose; NaN where NaN)."""
    wide = torch.complex128 if exp.is_complex() else torch.float64
    exp, act = exp.to(wide), act.to(wide)
    diff = (act - exp).abs()
    return exp, act, diff, (diff <= atol + rtol * exp.abs()) | (act == exp) | (torch.isnan(exp) & torch.isnan(act))


def _compare_flat(exp: torch.Tensor, act: torch.Tensor, atol: float, rtol: float) -> bool | None:
    """None when the chunk matches, True otherwise."""
    return None if bool(_widened(exp, act, atol, rtol)[3].all()) else True


def _mismatch_report(flat_exp: torch.Tensor, flat_act: torch.Tensor, shape: tuple[int, ...], atol: float,
                     rtol: float, first_chunk: int) -> dict:
    """Counts, maxima and the first bad element over every chunk from the first bad one on."""
    numel = flat_exp.numel()
    mismatched = nonfinite = 0
    first = None
    max_abs = max_rel = 0.0
    exp_v = act_v = 0.0
    for start in range(first_chunk, numel, _CHUNK):
        exp, act, diff, ok = _widened(flat_exp[start:start + _CHUNK], flat_act[start:start + _CHUNK], atol, rtol)
        bad = ~ok
        count = int(bad.sum())
        if count and first is None:
            k = int(bad.nonzero()[0, 0])
            first = start + k
            exp_v, act_v = exp[k].item(), act[k].item()
        mismatched += count
        both_finite = torch.isfinite(exp) & torch.isfinite(act)
        finite_diff = torch.where(both_finite, diff, torch.zeros_like(diff))
        rel = finite_diff / (exp.abs() + atol) if atol > 0 else finite_diff / exp.abs().clamp_min(1e-30)
        nonfinite += int((~torch.isfinite(act) & torch.isfinite(exp)).sum())
        max_abs, max_rel = max(max_abs, float(finite_diff.max())), max(max_rel, float(rel.max()))
    index = _unravel(first, shape)
    exp_v = exp_v.real if isinstance(exp_v, complex) else exp_v
    act_v = act_v.real if isinstance(act_v, complex) else act_v
    detail = (
        f"{mismatched} of {numel} elements differ beyond atol={atol:g}, rtol={rtol:g}; "
        f"first at index {index}: expected {exp_v:.6g}, got {act_v:.6g}"
    )
    if nonfinite:
        detail += f"; {nonfinite} elements are NaN/Inf where the reference is finite"
    return {
        "reason": "nonfinite" if nonfinite else "values",
        "detail": detail,
        "max_abs_error": max_abs,
        "max_rel_error": max_rel,
        "mismatched": mismatched,
        "numel": numel,
        "first_index": index,
        "expected_value": float(exp_v),
        "actual_value": float(act_v),
    }


def compare_outputs(expected: list[torch.Tensor], actual: list[torch.Tensor], atol: float, rtol: float) -> dict | None:
    """Compare output lists; the first mismatch wins, tagged with its `output_index`."""
    if len(actual) != len(expected):
        return {
            "reason": "count",
            "output_index": 0,
            "detail": f"forward returned {len(actual)} tensors but the reference returns {len(expected)}",
        }
    for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
        found = compare_tensors(exp, act, atol, rtol)
        if found is not None:
            return {**found, "output_index": i}
    return None


def inputs_mutated(originals: list[torch.Tensor], after: list[torch.Tensor],
                   positions: list[int] | None = None) -> dict | None:
    """Inputs must come back bit-identical: a forward that writes into its inputs is wrong. `positions` are the
    inputs' places in forward's argument list when only some are passed."""
    for n, (orig, now) in enumerate(zip(originals, after, strict=True)):
        i = positions[n] if positions is not None else n
        now = now.to(orig.device)
        same = now.shape == orig.shape and now.dtype == orig.dtype
        if same and orig.is_floating_point():
            same = torch.equal(torch.nan_to_num(now), torch.nan_to_num(orig))
        elif same:
            same = torch.equal(now, orig)
        if not same:
            return {
                "reason": "input_mutated",
                "output_index": i,
                "detail": f"forward modified input {i} in place; kernels must not write to their inputs",
            }
    return None


SAMPLE_POINTS = 1 << 20  # uniform positions per sampled output
SAMPLE_ENDS = 4096  # and this many at each end (tails are where block-boundary bugs live)


def sample_positions(numel: int, seed: int, device: torch.device | str) -> torch.Tensor:
    """Flat positions at which a large output is checked: both ends and `SAMPLE_POINTS` uniform draws from a
    generator seeded with `seed`. The sandbox (which draws the seed after the call returned) and the judge
    compute the same positions from the same seed on the same device, so only the values travel."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    ends = torch.cat([torch.arange(0, min(SAMPLE_ENDS, numel), device=device),
                      torch.arange(max(numel - SAMPLE_ENDS, 0), numel, device=device)])
    sample = torch.randint(0, numel, (SAMPLE_POINTS,), generator=generator, device=device)
    return torch.cat([ends, sample])


def compare_sampled(expected: torch.Tensor, shape: list[int], dtype: str, seed: int,
                    values: torch.Tensor, atol: float, rtol: float) -> dict | None:
    """Like `compare_tensors` for an output of which only `values` at `sample_positions(seed)` came back (the
    sandbox samples large outputs of timed calls at secret positions): a wrong or stale output differs almost
    everywhere, so a million positions find it."""
    if list(shape) != list(expected.shape):
        return {"reason": "shape", "detail": f"shape {list(shape)} but expected {list(expected.shape)}"}
    want = str(expected.dtype).removeprefix("torch.")
    if dtype != want:
        return {"reason": "dtype", "detail": f"dtype {dtype} but expected {want}"}
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 63 or expected.numel() == 0:
        return {"reason": "values", "detail": "malformed sample of a timed call's output"}
    positions = sample_positions(expected.numel(), seed, expected.device)
    if positions.numel() != values.numel():
        return {"reason": "values", "detail": "malformed sample of a timed call's output"}
    found = compare_tensors(expected.reshape(-1)[positions], values, atol, rtol)
    if found is not None and "first_index" in found:
        flat = int(positions[found["first_index"][0]])
        found["first_index"] = _unravel(flat, tuple(expected.shape))
        found["detail"] = (f"{found['mismatched']} of {found['numel']} sampled elements differ beyond atol={atol:g}, "
                           f"rtol={rtol:g}; first at index {found['first_index']}: expected "
                           f"{found['expected_value']:.6g}, got {found['actual_value']:.6g}")
        found["numel"] = expected.numel()
    return found
