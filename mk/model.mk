# mk/model.mk — targets of the model room (layers, WideResNet); included by the Makefile.
# The model's tests (test_layers, test_wrn_grad, test_wrn) are ordinary unit tests.

WRN_FIXTURE := tests/fixtures/wrn-10-1-b8
WRN_INIT := $(or $(TMPDIR),/tmp)/hvdlab-wrn-init

.PHONY: wrn-fixture model-tests

wrn-fixture: $(BUILD)/tests/prog_wrn_dump  ## regenerate the PyTorch reference fixture (needs python3-torch)
	$(BUILD)/tests/prog_wrn_dump $(WRN_INIT) wrn-10-1 8 1234 5e-4
	/usr/bin/python3 tests/reference/wrn_torch.py $(WRN_INIT) $(WRN_FIXTURE)
	rm -f $(WRN_INIT).txt $(WRN_INIT).bin

model-tests: $(BUILD)/tests/test_layers $(BUILD)/tests/test_wrn_grad $(BUILD)/tests/test_wrn  ## gradient checks and the PyTorch comparison only
	$(BUILD)/tests/test_layers && $(BUILD)/tests/test_wrn_grad && $(BUILD)/tests/test_wrn
