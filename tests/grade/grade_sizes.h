/* grade_sizes.h — the graded runs' sizes: the defaults of make gradeNN, or in class mode a file
 * of key=value lines (GRADE_SIZES_FILE, written by tools/grade_sizes.sh SEED) within the ranges
 * the checks accept. */
#ifndef HVDLAB_GRADE_SIZES_H
#define HVDLAB_GRADE_SIZES_H

#include <stddef.h>

#include "grade/grade_checks.h"

/* Sets g's np, train_n, test_n, batch, epochs, warmup, base_lr and seed (-1: the programs'
 * default) from the defaults, then from the file path when not NULL. 0, or -1 with a one-line
 * message naming the file and the key. */
int grade_sizes_load(grade_ctx *g, const char *path, char *err, size_t len);

#endif
