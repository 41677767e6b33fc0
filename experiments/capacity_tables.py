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


# t(0.975, df) for df = 1..30, as core/ss_stats.c (NIST/SEMATECH e-Handbook, 1.3.6.7.2).
T975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
        2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
        2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423]


def ci95(vals):
    """(mean, lo, hi): the mean of vals with its two-sided 95 % Student-t interval (t at
    n - 1 degrees of freedom, n <= 31); lo = hi = the mean for one value."""
    n = len(vals)
    mean = sum(vals) / n
    if n < 2:
        return mean, mean, mean
    sd = (sum((v - mean) ** 2 for v in vals) / (n - 1)) ** 0.5
    half = T975[n - 2] * sd / n ** 0.5
    return mean, mean - half, mean + half


def verdict(lo, hi):
    """A ratio's verdict from its interval: higher, lower, or no difference when it holds 1."""
    return "higher" if lo > 1 else "lower" if hi < 1 else "no difference"
