/* A main() for fuzz targets built without libFuzzer (gcc, or clang without -Dfuzzing=true):
 * runs LLVMFuzzerTestOneInput once over every file named on the command line and every file
 * of every directory named there (not hidden ones, not recursively), in name order, and says
 * how many it ran. The `fuzz` test suite replays each target's corpus this way, so seed and
 * regression inputs are checked by every ordinary build. Exit status 0, or 1 when an argument
 * cannot be read or no input was found; a failing input aborts. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Read the whole file into an exactly sized buffer (so that ASan sees reads past its end). */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    int bad = !buf || ferror(f);
    fclose(f);
    uint8_t *exact = bad ? NULL : malloc(n ? n : 1);
    if (!exact) {
        fprintf(stderr, "%s: cannot read: %s\n", path, bad ? strerror(errno) : "out of memory");
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int skip_entry(const struct dirent *de) { return de->d_name[0] != '.'; }

/* Every file of dir in name order: the count run, or -1. */
static int run_dir(const char *dir)
{
    struct dirent **list;
    int n = scandir(dir, &list, skip_entry, alphasort);
    if (n < 0) {
        fprintf(stderr, "%s: cannot list: %s\n", dir, strerror(errno));
        return -1;
    }
    int ran = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        if (ran >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            ran = run_file(path) ? -1 : ran + 1;
        free(list[i]);
    }
    free(list);
    return ran;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) ? -1 : 1;
        if (ran < 0)
            return 1;
        total += ran;
    }
    if (total == 0) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...: no input to replay\n", argv[0]);
        return 1;
    }
    printf("%s: %ld inputs replayed, no failure\n", argv[0], total);
    return 0;
}
