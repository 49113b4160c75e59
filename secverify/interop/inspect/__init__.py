"""secverify's environments as inspect_ai tasks (`inspect eval secverify/e1`): the runner's items, our episodes
played with inspect's model, and our verifiers as the scorers, so a completion earns the reward `secverify eval`
gives it. Imports inspect_ai: install the `inspect` extra."""
