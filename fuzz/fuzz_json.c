/* Fuzz target of the strict JSON reader (src/core/ss_json.c) that `slicesim fit import` reads
 * benchmark reports with: the input is one document. Checks the error contract (one line
 * naming the input), and that what is accepted is a well-formed tree: every string's length
 * its strlen, an object's keys present and distinct, no nesting beyond 64, numbers of any
 * value (NaN and the infinities included); and that everything is freed. */
#include "fuzz.h"

#include "core/ss_json.h"

#include <string.h>

static void walk(const ss_json *v, unsigned depth)
{
    FZ_ASSERT(depth <= 65);
    switch (v->type) {
    case SS_JSON_STR:
        FZ_ASSERT(v->u.str && strlen(v->u.str) == v->n);
        break;
    case SS_JSON_OBJ:
        FZ_ASSERT(v->n == 0 || v->keys);
        for (size_t i = 0; i < v->n; i++) {
            FZ_ASSERT(v->keys[i]);
            FZ_ASSERT(ss_json_get(v, v->keys[i]) == &v->u.items[i]); /* distinct keys */
        }
        /* fall through */
    case SS_JSON_ARR:
        FZ_ASSERT(v->n == 0 || v->u.items);
        for (size_t i = 0; i < v->n; i++)
            walk(&v->u.items[i], depth + 1);
        break;
    case SS_JSON_BOOL:
        FZ_ASSERT(v->u.num == 0 || v->u.num == 1);
        break;
    case SS_JSON_NULL:
    case SS_JSON_NUM:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    ss_json *j = NULL;
    ss_errbuf eb = {""};
    int rc = ss_json_parse(&j, (const char *)data, size, "fz.json", &eb);
    fz_check_error(rc, &eb, "fz.json");
    FZ_ASSERT(rc == SS_OK || rc == SS_EPARSE || rc == SS_ENOMEM);
    FZ_ASSERT((rc == SS_OK) == (j != NULL));
    if (j)
        walk(j, 1);
    ss_json_free(&j);
    fz_end();
    return 0;
}
