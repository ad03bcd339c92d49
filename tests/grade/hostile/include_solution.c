/* Hands in the kit's solution by including it (the path the issue names; hostile_test.sh also
 * makes a copy that names the kit's absolute path). */
#include "../solutions/step01.c"
