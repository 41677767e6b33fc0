/* slicesim entry point: dispatches to the subcommands. The only place that calls exit(). */
#include "version.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("slicesim %s\n", SS_VERSION);
        return 0;
    }
    fprintf(stderr, "usage: slicesim COMMAND [OPTIONS]\n");
    return 2;
}
