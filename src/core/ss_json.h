/* A small strict JSON reader for the files other tools write (benchmark reports that
 * `slicesim fit import` reads): a whole document parsed into a tree of values. RFC 8259
 * grammar, plus the three words Python's json module writes for floats that JSON lacks
 * (NaN, Infinity, -Infinity). Not a streaming parser (trace/ and workload/ have their own
 * for large line-oriented inputs) and not a writer. */
#ifndef SS_CORE_SS_JSON_H
#define SS_CORE_SS_JSON_H

#include "core/ss_err.h"

#include <stddef.h>

typedef enum ss_json_type {
    SS_JSON_NULL, SS_JSON_BOOL, SS_JSON_NUM, SS_JSON_STR, SS_JSON_ARR, SS_JSON_OBJ
} ss_json_type;

/* One value. Arrays and objects own their children; an object's keys are in file order. */
typedef struct ss_json ss_json;
struct ss_json {
    ss_json_type type;
    size_t n;                 /* STR: bytes (without the NUL); ARR, OBJ: children */
    union {
        double num;           /* NUM; BOOL: 0 or 1 */
        char *str;            /* STR: NUL-terminated UTF-8 (a \u0000 escape is refused) */
        ss_json *items;       /* ARR: the elements; OBJ: the values */
    } u;
    char **keys;              /* OBJ: keys[i] names items[i] (owned); NULL otherwise */
};

/**
 * Parse text[0..len) as one JSON document (surrounding blanks allowed). Duplicate keys in
 * an object, nesting deeper than 64 and a document that does not end after its value are
 * errors.
 * @param j_out the document, written only on success; free with ss_json_free
 * @param what  names the input in messages (a path; borrowed)
 * @return 0; SS_EPARSE with "WHAT: json: what is wrong (line L, column C)"; SS_ENOMEM
 */
int ss_json_parse(ss_json **j_out, const char *text, size_t len, const char *what,
                  ss_errbuf *eb);

/* Read path (a regular file: core/ss_input.h refuses a FIFO or a folder at once) and parse it
 * with ss_json_parse. 0; SS_EIO ("PATH: cannot open: why", read errors); SS_EPARSE;
 * SS_ENOMEM. *j_out is written only on success. */
int ss_json_read_file(ss_json **j_out, const char *path, ss_errbuf *eb);

/* Free a document and set *j = NULL; NULL and *j == NULL are accepted. */
void ss_json_free(ss_json **j);

/* The value of key in object o (borrowed), or NULL when o is NULL, not an object or has no
 * such key. */
const ss_json *ss_json_get(const ss_json *o, const char *key);

/* The name of a type, for messages: "null", "a boolean", "a number", "a string", "an array",
 * "an object". */
const char *ss_json_type_name(ss_json_type t);

#endif
