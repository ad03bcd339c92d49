/* grade_step01.c — grader for lab step 1: checks steps 1..1 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 1); }
