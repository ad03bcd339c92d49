/* grade_step02.c — grader for lab step 2: checks steps 1..2 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 2); }
