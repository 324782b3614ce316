// The end-to-end test with real kernel input lands here with the VM harness (scripts/vm).
