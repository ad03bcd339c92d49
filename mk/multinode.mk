# mk/multinode.mk — the kit across several hosts, made on this machine as network namespaces
# (tests/multinode/hosts.sh): make test-multinode. Needs root and ip(8); elsewhere it prints
# "multinode: skipped, <why>" and succeeds. Part of make test.
MULTINODE_BIN := $(BUILD)/tests/progs/prog_errors $(BUILD)/tests/mpi/test_collectives \
                 $(BUILD)/tests/mpi/test_fusion $(BUILD)/tests/mpi/test_distributed \
                 $(BUILD)/tests/mpi/test_metrics $(BUILD)/solutions/step07 \
                 $(BUILD)/tests/grade/grade_step07

.PHONY: test-multinode

test-multinode: solution10 $(MULTINODE_BIN)  ## run the kit across 2 hosts made of network namespaces (skipped without root)
	@sh tests/multinode/cleanup_test.sh; rc=$$?; [ $$rc = 77 ] && exit 0; [ $$rc = 0 ] || exit $$rc; \
	  $(TIMEOUT) 300 sh tests/multinode/hosts.sh -n 2 -s 2 run sh tests/multinode/suite.sh $(BUILD)
