/* grade_main.h — the shared main of the step graders (grade_stepNN: grade_main.c built with
 * -DGRADE_STEP=N, see mk/lab.mk). */
#ifndef HVDLAB_GRADE_MAIN_H
#define HVDLAB_GRADE_MAIN_H

/* Usage: grade_stepNN PROGRAM — runs PROGRAM under mpirun -n 2 with tracing on a small subset
 * and checks the behaviour of steps 1..step. Exit 0 if every check passes. */
int grade_main(int argc, char **argv, int step);

#endif
