# mk/model.mk — targets of common/nn/ and common/model/ (layers, WideResNet); included by the
# Makefile.
# The model's tests (test_layers, test_wrn_grad, test_wrn) are ordinary unit tests.

WRN_FIXTURE := tests/fixtures/wrn-10-1-b8
WRN_INIT := $(or $(TMPDIR),/tmp)/hvdlab-wrn-init

.PHONY: wrn-fixture model-tests

wrn-fixture: $(BUILD)/tests/progs/prog_wrn_dump  ## regenerate the PyTorch reference fixture (needs python3-torch)
	$(BUILD)/tests/progs/prog_wrn_dump $(WRN_INIT) wrn-10-1 8 1234 5e-4
	/usr/bin/python3 tests/reference/wrn_torch.py $(WRN_INIT) $(WRN_FIXTURE)
	rm -f $(WRN_INIT).txt $(WRN_INIT).bin

MODEL_TESTS := $(BUILD)/tests/unit/test_layers $(BUILD)/tests/unit/test_wrn_grad \
               $(BUILD)/tests/unit/test_wrn

model-tests: $(MODEL_TESTS)  ## gradient checks and the PyTorch comparison only
	@sh tests/run_unit.sh $^
