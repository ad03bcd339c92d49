/* grade_step09.c — grader for lab step 9: checks steps 1..9 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 9); }
