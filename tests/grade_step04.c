/* grade_step04.c — grader for lab step 4: checks steps 1..4 on the built program. */
#include "grade_main.h"

int main(int argc, char **argv) { return grade_main(argc, argv, 4); }
