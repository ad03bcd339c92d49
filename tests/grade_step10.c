/* grade_step10.c — grader for lab step 10: checks steps 1..10 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 10); }
