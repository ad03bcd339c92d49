/* optim_kinds.c — the table of optimizer kinds: names and codes to kinds, for the flags
 * (--optimizer), checkpoints and broadcasts. See optim.h.
 * Public: optimizer_kind_named, optimizer_kind_of, optimizer_kind_names.
 *
 * A file of its own, apart from optim.c: the table names every kind's file and those files call
 * optimizer_new, so with the table in optim.c the two would depend on each other.
 */
#include <stdio.h>
#include <string.h>

#include "base/errmsg.h"
#include "optim/optim.h"

/* One row per kind, in the order the names are listed (--help, messages). */
static const optimizer_kind *const KINDS[] = {&sgd_kind, &novograd_kind};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

const optimizer_kind *optimizer_kind_of(int code)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (KINDS[i]->code == code)
            return KINDS[i];
    return NULL;
}

void optimizer_kind_names(char *buf, size_t len, const char *sep, const char *last)
{
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < NKINDS && n < len; i++) {
        int k = snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : i + 1 == NKINDS ? last : sep,
                         KINDS[i]->name);
        if (k < 0)
            return;
        n += (size_t)k;
    }
}

const optimizer_kind *optimizer_kind_named(const char *name, char *err, size_t errlen)
{
    for (size_t i = 0; name && i < NKINDS; i++)
        if (strcmp(KINDS[i]->name, name) == 0)
            return KINDS[i];
    char names[128];
    optimizer_kind_names(names, sizeof names, ", ", " or ");
    errmsg_set(err, errlen, NULL, "'%s' is not %s", name ? name : "(null)", names);
    return NULL;
}
