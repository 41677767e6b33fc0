/* Strict parsing of numbers from text (CSV fields, INI values, command-line options).
 * Every function rejects empty input, trailing garbage, overflow, NaN and infinity, so that
 * callers can report "field: not a number" instead of silently reading 0. */
#ifndef SS_CORE_SS_PARSE_H
#define SS_CORE_SS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/ss_time.h"

/* Parse s[0..len) (leading/trailing blanks allowed) as a decimal integer. 0 or SS_EPARSE. */
int ss_parse_i64(const char *s, size_t len, int64_t *out);
/* As above, NUL-terminated. */
int ss_parse_i64z(const char *s, int64_t *out);
/* Finite double (strtod syntax). 0 or SS_EPARSE. */
int ss_parse_double(const char *s, size_t len, double *out);
int ss_parse_doublez(const char *s, double *out);
/* Finite double written in decimal, the syntax of the trace readers' numbers (that of
 * ss_parse_seconds_ns): [+-]DIGITS[.DIGITS][(e|E)[+-]DIGITS], exponent within +-400; hex
 * ("0x10", "0x1p3"), inf and nan are refused. For data files that follow the trace readers'
 * rule; the value is ss_parse_double's. 0 or SS_EPARSE. */
int ss_parse_decimal(const char *s, size_t len, double *out);
int ss_parse_decimalz(const char *s, double *out);
/* 1 when s[0..len) is a number in strtod syntax, however large, with its value (+-HUGE_VAL
 * when it overflows a double) in *out; 0 for anything else, NaN and "inf" included. Lets a
 * caller whose strict parser refused the text say "out of range" rather than "not a number". */
int ss_parse_number_value(const char *s, size_t len, double *out);
/* A decimal number of seconds ("12", "0.1809", "1.5e-3", "-0.25") converted to nanoseconds
 * exactly when it has at most 9 fractional digits after applying the exponent, otherwise
 * rounded half away from zero. Rejects values beyond +-9.2e9 s. 0 or SS_EPARSE. */
int ss_parse_seconds_ns(const char *s, size_t len, ss_time *out);
/* Return s with leading and trailing blanks (space, tab, CR) removed, length in *len. */
const char *ss_trim(const char *s, size_t *len);

#endif
