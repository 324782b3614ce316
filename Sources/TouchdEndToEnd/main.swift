// Placeholder until the end-to-end driver lands.
print("touchd-e2e: not written yet")
