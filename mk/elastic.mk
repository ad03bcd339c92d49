# mk/elastic.mk — Horovod's two advanced features the tutorials name, for real under mpirun
# (notebooks-md/07b-elastic-and-autotune.md):
#   make test-elastic   ./hvdrun --elastic: a rank of 3 killed and the job finished on 2 from
#                       its last commit; a slot added by the discovery script joined at the
#                       next commit; below --min-np, one line (tests/elastic/elastic.sh, ~1 min);
#                       HVD_AUTOTUNE=1 converging to one fusion threshold on every rank
#                       (tests/elastic/autotune.sh, ~30 s). Part of make test.

.PHONY: test-elastic

test-elastic: solution10  ## elastic kill-and-continue, grow at a commit, --min-np; autotune converges
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" $(TIMEOUT) 300 sh tests/elastic/elastic.sh ./solution10
	@MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" $(TIMEOUT) 180 sh tests/elastic/autotune.sh ./solution10
