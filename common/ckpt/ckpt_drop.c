/* ckpt_drop.c — the mid-epoch files an end-of-epoch checkpoint supersedes (ckpt.h).
 * Public: ckpt_drop_mid_epoch.
 */
#include "ckpt/ckpt.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_format.h"

int ckpt_drop_mid_epoch(const char *dir, int epoch)
{
    char path[4200];
    struct stat st;
    if (!dir || !*dir || epoch <= 0 || ckpt_path_at(path, sizeof path, dir, epoch, 0) < 0 ||
        stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* not saved: the mid-epoch files are still the newest work */
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int dropped = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int ep, batch, end = 0;
        if (sscanf(e->d_name, "checkpoint-%d.%d.ckpt%n", &ep, &batch, &end) != 2 ||
            e->d_name[end] != '\0' || end == 0 || ep < 0 || ep >= epoch || batch <= 0)
            continue;
        if (ckpt_path_at(path, sizeof path, dir, ep, batch) >= 0 && unlink(path) == 0)
            dropped++;
    }
    closedir(d);
    return dropped;
}
