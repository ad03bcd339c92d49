/* grade_step05.c — grader for lab step 5: checks steps 1..5 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 5); }
