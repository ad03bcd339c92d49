/* grade_step03.c — grader for lab step 3: checks steps 1..3 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 3); }
