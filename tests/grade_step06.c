/* grade_step06.c — grader for lab step 6: checks steps 1..6 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 6); }
