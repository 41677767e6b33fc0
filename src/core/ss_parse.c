/* Strict number parsing. Exact decimal-to-nanosecond conversion keeps trace arrival times
 * free of binary floating-point rounding, so the same file always gives the same integers. */
#include "core/ss_parse.h"

#include "core/ss_err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NUMBUF 128

const char *ss_trim(const char *s, size_t *len)
{
    size_t n = *len;
    while (n && (*s == ' ' || *s == '\t' || *s == '\r')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    *len = n;
    return s;
}

/* Copy a trimmed field into buf for the strto* family; fails if empty or too long. */
static int to_cstr(const char *s, size_t len, char buf[NUMBUF])
{
    s = ss_trim(s, &len);
    if (len == 0 || len >= NUMBUF)
        return SS_EPARSE;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return SS_OK;
}

int ss_parse_i64(const char *s, size_t len, int64_t *out)
{
    char buf[NUMBUF], *end;
    if (to_cstr(s, len, buf))
        return SS_EPARSE;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end || end == buf)
        return SS_EPARSE;
    *out = v;
    return SS_OK;
}

int ss_parse_i64z(const char *s, int64_t *out) { return ss_parse_i64(s, strlen(s), out); }

int ss_parse_double(const char *s, size_t len, double *out)
{
    char buf[NUMBUF], *end;
    if (to_cstr(s, len, buf))
        return SS_EPARSE;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno == ERANGE && fabs(v) > 1.0)
        return SS_EPARSE;
    if (*end || end == buf || !isfinite(v))
        return SS_EPARSE;
    *out = v;
    return SS_OK;
}

int ss_parse_doublez(const char *s, double *out) { return ss_parse_double(s, strlen(s), out); }

int ss_parse_number_value(const char *s, size_t len, double *out)
{
    char buf[NUMBUF], *end;
    if (to_cstr(s, len, buf))
        return 0;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || end == buf || isnan(v) || (isinf(v) && errno != ERANGE))
        return 0;
    *out = v;
    return 1;
}

/* Accumulate up to 19 significant digits of a decimal mantissa; returns the count of digits
 * consumed, records how many were after the point, and whether any nonzero digit was dropped. */
typedef struct mantissa {
    uint64_t digits;  /* significant digits kept */
    int n_frac;       /* kept digits after the decimal point */
    int dropped_int;  /* integer-part digits dropped for precision (scale up by 10^n) */
} mantissa;

static size_t read_mantissa(const char *s, size_t n, mantissa *m)
{
    size_t i = 0;
    int seen_point = 0, any = 0, n_sig = 0;
    memset(m, 0, sizeof *m);
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !seen_point) {
            seen_point = 1;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        any = 1;
        if (n_sig < 18) {
            if (m->digits || c != '0')
                n_sig++;
            m->digits = m->digits * 10 + (uint64_t)(c - '0');
            m->n_frac += seen_point;
        } else if (!seen_point) {
            m->dropped_int++;
        } /* further fractional digits are below 1e-18 relative: ignored */
    }
    return any ? i : 0;
}

/* A number in decimal notation, the one syntax the trace readers take (and, through
 * ss_parse_decimal, every reader that shares their rule): [+-]DIGITS[.DIGITS][(e|E)EXP] with a
 * digit in the mantissa and a decimal exponent within +-400; no hex, no inf or nan. */
typedef struct decimal {
    int neg;          /* a leading '-' */
    mantissa m;       /* its digits */
    int64_t exp10;    /* the exponent (0 without one) */
} decimal;

static int scan_decimal(const char *s, size_t len, decimal *d)
{
    s = ss_trim(s, &len);
    size_t i = 0;
    d->neg = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        d->neg = s[i++] == '-';
    size_t used = read_mantissa(s + i, len - i, &d->m);
    if (!used)
        return SS_EPARSE;
    i += used;
    d->exp10 = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (ss_parse_i64(s + i + 1, len - i - 1, &d->exp10) || d->exp10 < -400 ||
            d->exp10 > 400)
            return SS_EPARSE;
        i = len;
    }
    return i == len ? SS_OK : SS_EPARSE;
}

int ss_parse_decimal(const char *s, size_t len, double *out)
{
    decimal d;
    if (scan_decimal(s, len, &d))
        return SS_EPARSE;
    return ss_parse_double(s, len, out);
}

int ss_parse_decimalz(const char *s, double *out) { return ss_parse_decimal(s, strlen(s), out); }

int ss_parse_seconds_ns(const char *s, size_t len, ss_time *out)
{
    decimal x;
    if (scan_decimal(s, len, &x))
        return SS_EPARSE;
    /* value = digits * 10^(exp10 + dropped_int - n_frac) seconds = digits * 10^shift ns */
    int64_t shift = x.exp10 + x.m.dropped_int - x.m.n_frac + 9;
    long double v = (long double)x.m.digits;
    if (shift >= 0) {
        for (int64_t k = 0; k < shift; k++) {
            v *= 10;
            if (v > 9.2e18L)
                return SS_EPARSE;
        }
    } else {
        /* Drop -shift digits, rounding half away from zero on the first dropped digit. */
        uint64_t d = x.m.digits, first_dropped = 0;
        for (int64_t k = -shift; k > 0; k--) {
            first_dropped = d % 10;
            d /= 10;
            if (!d && k > 1) {
                first_dropped = 0;
                break;
            }
        }
        v = (long double)(d + (first_dropped >= 5));
    }
    ss_time t = (ss_time)v;
    *out = x.neg ? -t : t;
    return SS_OK;
}
