/* grade_step08.c — grader for lab step 8: checks steps 1..8 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 8); }
