"""What the capacity experiments' tables share: reading `slicesim capacity --json` output.

A probe "spans" when every tenant's arrivals reach the window's end. A capacity is censored
(a lower bound) when the load just above it met the SLA bound but failed only because a
tenant's arrivals stopped early (its trace ran out)."""


def censored(p, bound):
    """Whether bundle p's capacity is a lower bound (see above)."""
    hi = [q for q in p["probes"] if q["load"] == p.get("hi")]
    return bool(hi) and not hi[-1]["spans"] and hi[-1]["sla_miss"] <= bound


def cap(p):
    """Bundle p's capacity, 0 when its search found none."""
    return p["capacity"] if p["status"] == "found" else 0.0


def span(vals, fmt):
    """min–max of vals in fmt, or one value when they print alike."""
    lo, hi = min(vals), max(vals)
    return fmt % lo if fmt % lo == fmt % hi else (fmt % lo) + "–" + (fmt % hi)
