/* grade_reference.h — class mode: the student's trace against a reference run's, the kit's
 * solution of the same step graded with the same sizes and seed (GRADE_WORK_DIR kept it). A
 * program that trains as the solution does leaves the same digests; a forged trace, or a
 * program that does other work than it claims, does not. A disagreement is flagged for
 * review; it does not change the verdict. */
#ifndef HVDLAB_GRADE_REFERENCE_H
#define HVDLAB_GRADE_REFERENCE_H

#include <stddef.h>

#include "grade/grade.h"

/* Compares run r (np ranks) with the reference's trace folder ref_dir/trace-<tag>, on every
 * rank: some optimizer steps where the reference made some; the weights' digest after each of
 * the first GRADE_REF_STEPS steps (on the CPU only: a GPU's may vary from run to run); the
 * learning rate of every step both made; the digest of every training shard the reference drew.
 * 0 when they agree or ref_dir has no trace-<tag> (a run the reference did not make); else -1
 * with the first difference in msg. */
#define GRADE_REF_STEPS 3
int grade_reference_compare(const char *ref_dir, const char *tag, grade_run *r, int np, char *msg,
                            size_t len);

#endif
