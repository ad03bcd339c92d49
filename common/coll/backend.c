/* backend.c — the walk of the table of ways. See backend.h.
 * Public: backend_for. */
#include "coll/backend.h"

#include "base/fatal.h"

const coll_backend *backend_for(const coll_backend *const *rows, size_t n, const fusion_entry *e,
                                size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i]->enabled(e, len))
            return rows[i];
    fatal_error("collective \"%s\": no way for it among %zu (the host's row must end the table)",
                len ? e[0].name : "", n);
}
