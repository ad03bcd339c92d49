/* Writes into the paths named in $HVDLAB_HOSTILE_TARGETS (colon-separated folders: another
 * student's submission and results, OUT, the kit's build/ and its graders): a new file in each,
 * and over each file there. Prints how many writes succeeded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *t = getenv("HVDLAB_HOSTILE_TARGETS");
    int ok = 0;
    for (char *d = t ? strtok(t, ":") : NULL; d; d = strtok(NULL, ":")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/hostile-was-here", d);
        FILE *f = fopen(path, "w");
        ok += f && fputs("x\n", f) >= 0;
        if (f)
            fclose(f);
        DIR *dir = opendir(d);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, "hostile-was-here") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", d, e->d_name);
            f = fopen(path, "a");
            ok += f && fputs("tampered\n", f) >= 0;
            if (f)
                fclose(f);
        }
        if (dir)
            closedir(dir);
    }
    fprintf(stderr, "hostile: writes %d\n", ok);
    printf("Test accuracy: 0.9500\n");
    return 0;
}
