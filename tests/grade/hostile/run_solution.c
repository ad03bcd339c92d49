/* Runs the kit's built solution ($HVDLAB_HOSTILE_SOLUTION, e.g. build/solutions/step01) in its
 * place, with the same arguments. Prints why it could not. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *s = getenv("HVDLAB_HOSTILE_SOLUTION");
    (void)argc;
    if (s)
        execv(s, argv);
    fprintf(stderr, "hostile: exec %s: %s\n", s ? s : "(unset)", strerror(errno));
    return 1;
}
