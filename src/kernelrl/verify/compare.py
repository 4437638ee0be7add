"""Compare candidate outputs with reference outputs and say precisely how they differ."""

from __future__ import annotations

from functools import partial

import torch


def _unravel(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for dim in reversed(shape):
        index.append(flat_index % dim)
        flat_index //= dim
    return list(reversed(index))


def compare_tensors(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float,
                    ref_error: torch.Tensor | None = None, k: float = 0.0) -> dict | None:
    """None when `actual` matches `expected` (allclose semantics, NaN only where the reference has NaN);
    otherwise a dict of Mismatch fields (without trial/output_index). With `ref_error` (the float64 answer
    minus `expected`, same shape) an element also passes within atol + rtol * |exact| + k * |ref_error| of
    the float64 answer (kernelrl.verify.tolerance)."""
    if tuple(actual.shape) != tuple(expected.shape):
        return {"reason": "shape",
                "detail": f"shape {list(actual.shape)} but expected {list(expected.shape)}"}
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
    flat_err = ref_error.to(expected.device).reshape(-1) if ref_error is not None else None
    tol = _Allowance(atol, rtol, k, flat_err)
    # in chunks: the float64 temporaries of a GB-sized output would otherwise take several times its size
    for start in range(0, numel, _CHUNK):
        found = _compare_flat(flat_exp[start:start + _CHUNK], flat_act[start:start + _CHUNK], tol, start)
        if found is not None:  # the rest only adds to the counts and maxima
            return _mismatch_report(flat_exp, flat_act, tuple(expected.shape), tol, start)
    return None


_CHUNK = 1 << 24  # elements compared at once


class _Allowance:
    """atol, rtol and, when the reference was also computed in float64, its error and the factor k."""

    def __init__(self, atol: float, rtol: float, k: float = 0.0, err: torch.Tensor | None = None) -> None:
        self.atol, self.rtol, self.k, self.err = atol, rtol, k, err

    def chunk(self, start: int) -> torch.Tensor | None:
        return None if self.err is None else self.err[start:start + _CHUNK].to(torch.float64)


def _widened(exp: torch.Tensor, act: torch.Tensor, tol: _Allowance, start: int, ratios: bool = False):
    """Both in float64 (complex128), |act - exp|, which elements are close (allclose; NaN where NaN; or within
    the float64 allowance) and, with `ratios` (the mismatch report only), each element's error over what it
    was allowed (the smaller of the two models')."""
    wide = torch.complex128 if exp.is_complex() else torch.float64
    exp, act = exp.to(wide), act.to(wide)
    diff = (act - exp).abs()
    allowed = tol.atol + tol.rtol * exp.abs()
    ok = (diff <= allowed) | (act == exp) | (torch.isnan(exp) & torch.isnan(act))
    ratio = diff / allowed if ratios else None
    err = tol.chunk(start)
    if err is not None:
        exact = exp + err
        diff_exact = (act - exact).abs()
        allowed_exact = tol.atol + tol.rtol * exact.abs() + tol.k * err.abs()
        ok |= diff_exact <= allowed_exact
        ratio = torch.fmin(ratio, diff_exact / allowed_exact) if ratios else None
    return exp, act, diff, ok, ratio


def _compare_flat(exp: torch.Tensor, act: torch.Tensor, tol: _Allowance, start: int) -> bool | None:
    """None when the chunk matches, True otherwise."""
    return None if bool(_widened(exp, act, tol, start)[3].all()) else True


def _mismatch_report(flat_exp: torch.Tensor, flat_act: torch.Tensor, shape: tuple[int, ...], tol: _Allowance,
                     first_chunk: int) -> dict:
    """Counts, maxima and the first bad element over every chunk from the first bad one on."""
    atol, rtol = tol.atol, tol.rtol
    numel = flat_exp.numel()
    mismatched = nonfinite = 0
    first = None
    max_abs = max_rel = max_ratio = 0.0
    exp_v = act_v = 0.0
    for start in range(first_chunk, numel, _CHUNK):
        exp, act, diff, ok, ratio = _widened(flat_exp[start:start + _CHUNK], flat_act[start:start + _CHUNK],
                                             tol, start, ratios=True)
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
        if count:
            max_ratio = max(max_ratio,
                            float(torch.where(both_finite & bad, ratio, torch.zeros_like(ratio)).max()))
    index = _unravel(first, shape)
    exp_v = exp_v.real if isinstance(exp_v, complex) else exp_v
    act_v = act_v.real if isinstance(act_v, complex) else act_v
    beyond = f"atol={atol:g}, rtol={rtol:g}"
    if tol.err is not None:
        beyond += f" (and beyond {tol.k:g}x the reference's own error against its float64 recomputation)"
    detail = (
        f"{mismatched} of {numel} elements differ beyond {beyond}; "
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
        # the worst finite element's error over its allowance (None: an exact comparison, nothing to scale by)
        "tolerance_ratio": max_ratio if max_ratio < float("inf") and (atol > 0 or rtol > 0) else None,
        "reference_error": float(tol.err.abs().max()) if tol.err is not None and tol.err.numel() else None,
    }


def compare_outputs(expected: list[torch.Tensor], actual: list[torch.Tensor], atol: float, rtol: float,
                    ref_errors: list[torch.Tensor | None] | None = None, k: float = 0.0) -> dict | None:
    """Compare output lists; the first mismatch wins, tagged with its `output_index`. `ref_errors`: per
    output, the float64 answer minus the reference, or None (see `compare_tensors`)."""
    if len(actual) != len(expected):
        return {
            "reason": "count",
            "output_index": 0,
            "detail": f"forward returned {len(actual)} tensors but the reference returns {len(expected)}",
        }
    for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
        err = ref_errors[i] if ref_errors is not None and i < len(ref_errors) else None
        found = compare_tensors(exp, act, atol, rtol, err, k)
        if found is not None:
            return {**found, "output_index": i}
    return None


def widen(check, errors_of, k: float) -> tuple[dict | None, bool | None]:
    """A comparison under the tolerance model: `check(errors, k)` is the comparison (errors None: plain
    allclose), `errors_of()` the trial's (errors, why none). Returns the mismatch, and True when only the
    float64 allowance let the outputs pass (None otherwise)."""
    found = check(None, 0.0)
    if found is None or found.get("reason") != "values" or not k:
        return found, None
    errors, why = errors_of()
    if why is not None:
        found["detail"] += f" (no float64 reference: {why})"
        return found, None
    found = check(errors, k)
    return found, True if found is None else None


def compare_timed(expected: list[torch.Tensor], metas: list[dict], read, atol: float, rtol: float, errors_of,
                  k: float) -> tuple[dict | None, bool | None]:
    """A timed call's outputs (large ones sampled at secret positions, `meta["sampled"]` values from
    `meta["sample_seed"]`), read by `read(k, meta, ref)`, under the tolerance model (see `widen`)."""
    if len(metas) != len(expected):
        return {"reason": "count", "output_index": 0, "detail": f"forward returned {len(metas)} "
                f"tensors but the reference returns {len(expected)}"}, None
    widened = None
    for n, (meta, ref) in enumerate(zip(metas, expected, strict=True)):
        values = read(n, meta, ref)
        if meta.get("sampled"):
            check = partial(compare_sampled, ref, meta["shape"], meta["dtype"], meta.get("sample_seed"),
                            values)
        else:
            check = partial(compare_tensors, ref, values)
        found, wide = widen(lambda errors, kk, n=n, check=check: check(atol, rtol, errors and errors[n], kk),
                            errors_of, k)
        if found is not None:
            return {**found, "output_index": n}, None
        widened = widened or wide
    return None, widened

def inputs_mutated(originals: list[torch.Tensor], after: list[torch.Tensor],
                   positions: list[int] | None = None) -> dict | None:
    """Inputs must come back bit-identical: a forward that writes into its inputs is wrong. `positions` are
    the inputs' places in forward's argument list when only some are passed."""
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


def compare_sampled(expected: torch.Tensor, shape: list[int], dtype: str, seed: int, values: torch.Tensor,
                    atol: float, rtol: float, ref_error: torch.Tensor | None = None,
                    k: float = 0.0) -> dict | None:
    """Like `compare_tensors` for an output of which only `values` at `sample_positions(seed)` came back (the
    sandbox samples large outputs of timed calls at secret positions): a wrong or stale output differs almost
    everywhere, so a million positions find it."""
    if list(shape) != list(expected.shape):
        return {"reason": "shape", "detail": f"shape {list(shape)} but expected {list(expected.shape)}"}
    want = str(expected.dtype).removeprefix("torch.")
    if dtype != want:
        return {"reason": "dtype", "detail": f"dtype {dtype} but expected {want}"}
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 63 \
            or expected.numel() == 0:
        return {"reason": "values", "detail": "malformed sample of a timed call's output"}
    positions = sample_positions(expected.numel(), seed, expected.device)
    if positions.numel() != values.numel():
        return {"reason": "values", "detail": "malformed sample of a timed call's output"}
    err = ref_error.reshape(-1)[positions.to(ref_error.device)] if ref_error is not None else None
    found = compare_tensors(expected.reshape(-1)[positions], values, atol, rtol, err, k)
    if found is not None and "first_index" in found:
        flat = int(positions[found["first_index"][0]])
        found["first_index"] = _unravel(flat, tuple(expected.shape))
        found["detail"] = (f"{found['mismatched']} of {found['numel']} sampled elements differ beyond "
                           f"atol={atol:g}, rtol={rtol:g}; first at index {found['first_index']}: expected "
                           f"{found['expected_value']:.6g}, got {found['actual_value']:.6g}")
        found["numel"] = expected.numel()
    return found
