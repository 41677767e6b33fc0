/* Private to app/: the policy bundles and the comma-list split as cmd_plot.c names them. Both
 * moved to runner/bundle.h (runner_split_list splits sweep grid values too); this header keeps
 * the split's app/ name until cmd_plot.c includes runner/bundle.h itself. */
#ifndef SS_APP_BUNDLE_H
#define SS_APP_BUNDLE_H

#include "runner/bundle.h"

/* runner_split_list under its former name. */
static inline int app_split_list(char *s, char **items, int max)
{
    return runner_split_list(s, items, max);
}

#endif
