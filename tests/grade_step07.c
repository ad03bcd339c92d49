/* grade_step07.c — grader for lab step 7: checks steps 1..7 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 7); }
