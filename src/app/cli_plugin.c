/* --plugin FILE.so, taken by every command: each policy plug-in is loaded (runner/plugin.h)
 * before the command runs, so that its policies are found by name like the built-ins. */
#include "app/cli.h"

#include "runner/plugin.h"

#include <stdio.h>
#include <string.h>

int cli_plugins_load(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *path = NULL;
        if (!strcmp(argv[i], "--plugin")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "slicesim: --plugin needs a FILE.so\n");
                return CLI_EUSAGE;
            }
            path = argv[++i];
        } else if (!strncmp(argv[i], "--plugin=", 9)) {
            path = argv[i] + 9;
        } else if (!strcmp(argv[i], "--")) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        ss_errbuf eb = {""};
        if (runner_plugin_load(path, &eb)) {
            fprintf(stderr, "slicesim: --plugin %s\n", eb.msg);
            return CLI_EUSAGE;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return CLI_OK;
}
