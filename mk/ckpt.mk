# mk/ckpt.mk — targets of the checkpoint room; included by the Makefile.
# test_ckpt_resume (the lab's step 7 flow: rank 0 saves, finds, loads; broadcasts) runs under
# mpirun -n 1..4 with the other multi-rank tests.
MULTIRANK_TESTS += test_ckpt_resume
