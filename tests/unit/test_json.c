/* The strict JSON reader (core/ss_json): a document of every type, escapes and surrogate
 * pairs to UTF-8, Python's NaN and Infinity, each grammar error with its line and column,
 * duplicate keys, nesting depth, a file read from disk and a FIFO refused, and every
 * allocation failing in turn without a leak. */
#include "support/test_util.h"

#include "core/ss_alloc.h"
#include "core/ss_err.h"
#include "core/ss_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static ss_json *parse_ok(const char *text)
{
    ss_json *j = NULL;
    ss_errbuf eb = {""};
    int rc = ss_json_parse(&j, text, strlen(text), "t.json", &eb);
    if (rc)
        fail_msg("unexpected error: %s", eb.msg);
    return j;
}

static void expect_error(const char *text, const char *msg)
{
    ss_json *j = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(ss_json_parse(&j, text, strlen(text), "t.json", &eb), SS_EPARSE);
    assert_null(j);
    assert_string_equal(eb.msg, msg);
}

static void test_document(void **state)
{
    (void)state;
    ss_json *j = parse_ok("\xEF\xBB\xBF { \"a\": [1, -2.5e3, 0, true, false, null],\n"
                          "  \"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\n"
                          "  \"o\": {}, \"e\": [], \"n\": NaN, \"i\": -Infinity }");
    assert_int_equal(j->type, SS_JSON_OBJ);
    assert_int_equal(j->n, 6);
    const ss_json *a = ss_json_get(j, "a");
    assert_non_null(a);
    assert_int_equal(a->type, SS_JSON_ARR);
    assert_int_equal(a->n, 6);
    assert_true(a->u.items[0].u.num == 1);
    assert_true(a->u.items[1].u.num == -2500);
    assert_int_equal(a->u.items[3].type, SS_JSON_BOOL);
    assert_true(a->u.items[3].u.num == 1);
    assert_true(a->u.items[4].u.num == 0);
    assert_int_equal(a->u.items[5].type, SS_JSON_NULL);
    const ss_json *s = ss_json_get(j, "s");
    assert_string_equal(s->u.str, "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
    assert_int_equal(s->n, strlen(s->u.str));
    assert_int_equal(ss_json_get(j, "o")->type, SS_JSON_OBJ);
    assert_int_equal(ss_json_get(j, "e")->n, 0);
    assert_true(isnan(ss_json_get(j, "n")->u.num));
    assert_true(isinf(ss_json_get(j, "i")->u.num) && ss_json_get(j, "i")->u.num < 0);
    assert_null(ss_json_get(j, "missing"));
    assert_null(ss_json_get(a, "a")); /* not an object */
    assert_string_equal(j->keys[0], "a");
    ss_json_free(&j);
    assert_null(j);
    ss_json_free(&j);
    tu_assert_no_leaks();
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("", "t.json: json: unexpected end of input (line 1, column 1)");
    expect_error("{\"a\": 1,\n \"a\": 2}",
                 "t.json: json: duplicate key in an object (line 2, column 2)");
    expect_error("[1, 2", "t.json: json: expected ',' or ']' in an array (line 1, column 6)");
    expect_error("[01]", "t.json: json: number with a leading zero (line 1, column 2)");
    expect_error("[1.]", "t.json: json: number without digits after '.' (line 1, column 2)");
    expect_error("[1e]",
                 "t.json: json: number without digits in its exponent (line 1, column 2)");
    expect_error("[+1]", "t.json: json: expected a value (line 1, column 2)");
    expect_error("{\"a\" 1}", "t.json: json: expected ':' after an object key (line 1, column 6)");
    expect_error("{1: 2}", "t.json: json: expected a string key in an object (line 1, column 2)");
    expect_error("\"abc", "t.json: json: unterminated string (line 1, column 1)");
    expect_error("\"a\tb\"", "t.json: json: control character in a string (line 1, column 3)");
    expect_error("\"\\x\"", "t.json: json: bad escape in a string (line 1, column 2)");
    expect_error("\"\\u00g0\"", "t.json: json: bad \\u escape (line 1, column 6)");
    expect_error("\"\\ud800\"",
                 "t.json: json: high surrogate without its low half (line 1, column 2)");
    expect_error("\"\\udc00\"",
                 "t.json: json: lone low surrogate in a \\u escape (line 1, column 2)");
    expect_error("\"\\u0000\"", "t.json: json: \\u0000 in a string (line 1, column 2)");
    expect_error("{} x", "t.json: json: characters after the document (line 1, column 4)");
    expect_error("[tru]", "t.json: json: expected a value (line 1, column 2)");
    expect_error("{\"a\": 1 \"b\": 2}",
                 "t.json: json: expected ',' or '}' in an object (line 1, column 9)");
    char deep[200];
    memset(deep, '[', 65);
    deep[65] = '\0';
    expect_error(deep, "t.json: json: nested deeper than 64 (line 1, column 65)");
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = '\0';
    ss_json *j = parse_ok(deep);
    ss_json_free(&j);
    tu_assert_no_leaks();
}

static void test_file(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir();
    const char *path = tu_write_file(dir, "r.json", "{\"rate\": 4, \"ttfts\": [0.5, 0.25]}\n");
    ss_json *j = NULL;
    ss_errbuf eb = {""};
    assert_int_equal(ss_json_read_file(&j, path, &eb), SS_OK);
    assert_true(ss_json_get(j, "ttfts")->u.items[1].u.num == 0.25);
    ss_json_free(&j);
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/fifo.json", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(ss_json_read_file(&j, fifo, &eb), SS_EPARSE);
    assert_non_null(strstr(eb.msg, "not a regular file"));
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/none.json", dir);
    assert_int_equal(ss_json_read_file(&j, missing, &eb), SS_EIO);
    assert_null(j);
    tu_tmpdir_cleanup();
    tu_assert_no_leaks();
}

/* Every allocation of a parse fails in turn: SS_ENOMEM, nothing returned, nothing leaked. */
static void test_out_of_memory(void **state)
{
    (void)state;
    const char *text = "{\"a\": [1, 2, {\"b\": \"c\"}], \"d\": \"e\", \"f\": [[], [3]]}";
    int ok = 0;
    for (uint64_t n = 1; n < 200 && !ok; n++) {
        ss_json *j = NULL;
        ss_errbuf eb = {""};
        ss_alloc_fail_after(n);
        int rc = ss_json_parse(&j, text, strlen(text), "t.json", &eb);
        ss_alloc_fail_after(0);
        if (rc == SS_OK) {
            ok = 1;
            ss_json_free(&j);
        } else {
            assert_int_equal(rc, SS_ENOMEM);
            assert_null(j);
        }
        tu_assert_no_leaks();
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
