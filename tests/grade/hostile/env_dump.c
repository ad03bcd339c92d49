/* Prints every environment variable it can see (a grader's secret would be among them). */
#include <stdio.h>

extern char **environ;

int main(void)
{
    for (char **e = environ; *e; e++)
        fprintf(stderr, "hostile: env %s\n", *e);
    return 0;
}
