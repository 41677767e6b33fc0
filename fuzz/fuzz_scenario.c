/* Fuzz target of scenario files (src/scenario): the input is read as a scenario file with
 * scn_load, then checked with scn_check; each of its lines is also applied as a --set
 * assignment (scn_set) to a fresh scenario. Checks the error contract ("FILE:LINE: ..." for
 * files, "--set: ..." for assignments) and scn_write's promise that a checked scenario reads
 * back identical: write, load, write again, and compare the two texts. */
#include "fuzz.h"

#include "core/ss_alloc.h"
#include "scenario/scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SET_LINES 32

/* scn_write's text of s; caller frees with free(). */
static char *written(const scn_scenario *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    FZ_ASSERT(f != NULL);
    FZ_ASSERT(scn_write(s, f) == SS_OK);
    FZ_ASSERT(fclose(f) == 0);
    return buf;
}

/* Write s, read it back, write again: the texts must match. */
static void round_trip(const scn_scenario *s)
{
    size_t len1, len2;
    char *text1 = written(s, &len1);
    char path[1024];
    fz_write(path, sizeof path, "rt.ini", (const uint8_t *)text1, len1);
    scn_scenario *back = NULL;
    FZ_ASSERT(scn_create(&back) == SS_OK);
    ss_errbuf eb = {""};
    int rc = scn_load(back, path, &eb);
    if (rc)
        fz_fail(__FILE__, __LINE__, "scn_write's output does not load: %s\n%s", eb.msg, text1);
    char *text2 = written(back, &len2);
    if (len1 != len2 || memcmp(text1, text2, len1))
        fz_fail(__FILE__, __LINE__, "scn_write -> scn_load -> scn_write differs:\n%s\n---\n%s",
                text1, text2);
    scn_destroy(&back);
    free(text1);
    free(text2);
}

static void load_file(const uint8_t *data, size_t size)
{
    char path[1024];
    fz_write(path, sizeof path, "s.ini", data, size);
    scn_scenario *s = NULL;
    FZ_ASSERT(scn_create(&s) == SS_OK);
    ss_errbuf eb = {""};
    int rc = scn_load(s, path, &eb);
    fz_check_error(rc, &eb, path);
    if (rc == SS_OK) {
        rc = scn_check(s, &eb);
        fz_check_error(rc, &eb, NULL);
        if (rc == SS_OK) /* runs store checked scenarios only */
            round_trip(s);
    }
    scn_destroy(&s);
    FZ_ASSERT(s == NULL);
}

static void set_lines(const uint8_t *data, size_t size)
{
    char *text = ss_strndup((const char *)data, size);
    FZ_ASSERT(text != NULL);
    scn_scenario *s = NULL;
    FZ_ASSERT(scn_create(&s) == SS_OK);
    char *save = NULL;
    int n = 0;
    for (char *line = strtok_r(text, "\n", &save); line && n < MAX_SET_LINES;
         line = strtok_r(NULL, "\n", &save), n++) {
        ss_errbuf eb = {""};
        int rc = scn_set(s, line, &eb);
        fz_check_error(rc, &eb, "--set");
        FZ_ASSERT(rc == SS_OK || !strncmp(eb.msg, "--set: ", 7) || rc == SS_ENOMEM);
    }
    ss_errbuf eb = {""};
    int rc = scn_check(s, &eb);
    fz_check_error(rc, &eb, NULL);
    if (rc == SS_OK)
        round_trip(s);
    scn_destroy(&s);
    ss_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_begin();
    load_file(data, size);
    set_lines(data, size);
    fz_end();
    return 0;
}
