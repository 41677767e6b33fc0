/* Line-oriented reader of simple CSV files (profile tables, imported measurement files): a
 * header row of column names, then rows split on commas, with the line number of every row
 * for "FILE:LINE: column: what is wrong" messages. No quoting: fields cannot contain commas.
 * A UTF-8 byte-order mark at the start of the file is skipped, as the trace readers skip it.
 * Not for traces (trace/ has its own streaming readers with digests). */
#ifndef SS_CORE_SS_CSV_H
#define SS_CORE_SS_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "core/ss_err.h"

/* An open CSV file. Fields and header names are trimmed of blanks and CR. */
typedef struct ss_csv {
    FILE *f;          /* owned */
    const char *path; /* borrowed, for messages */
    unsigned line;    /* line number of the current row (1-based) */
    int comments;     /* skip lines whose first non-blank character is '#' */
    char *buf;        /* current line, split in place (owned) */
    size_t buf_cap;   /* bytes */
    char **fld;       /* fields of the current row, pointers into buf (owned array) */
    size_t n_fld, fld_cap;
    char *hbuf;       /* header line (owned) */
    char **hdr;       /* header names, pointers into hbuf (owned array) */
    size_t n_hdr, hdr_cap;
    unsigned hdr_line; /* line of the header row */
} ss_csv;

/* Open path and read its header row (the first line that is neither blank nor, with comments
 * set, a '#' comment). 0; SS_EIO when the file cannot be opened; SS_EPARSE when it is not a
 * regular file ("PATH: not a regular file": a FIFO is refused, not waited on; core/ss_input.h)
 * or has no header row; SS_ENOMEM. On failure c holds nothing to close. path is borrowed and must
 * outlive c; eb gets "PATH: what" or "PATH:LINE: what". */
int ss_csv_open(ss_csv *c, const char *path, int comments, ss_errbuf *eb);
/* Read the next row: 1 when there is one, 0 at end of file, SS_EPARSE when its number of
 * fields differs from the header's, SS_EIO on a read error, SS_ENOMEM. Blank lines (and
 * comments, if enabled) are skipped. */
int ss_csv_next(ss_csv *c, ss_errbuf *eb);
/* Index of the header column named name, or -1. */
int ss_csv_col(const ss_csv *c, const char *name);
/* Field col of the current row ("" when col < 0 or beyond the row). Borrowed until the next
 * ss_csv_next. */
const char *ss_csv_get(const ss_csv *c, int col);
/* Format "PATH:LINE: col: message" (no "col: " when col is NULL) for the current row into
 * eb and return rc. */
int ss_csv_err(const ss_csv *c, ss_errbuf *eb, int rc, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Close the file and free the buffers; c may be zeroed or already closed. */
void ss_csv_close(ss_csv *c);

#endif
