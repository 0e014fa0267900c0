"""What the harness's self-tests share: their wrong verdicts, said and
turned into the exit status."""


def report(fails, what):
    """Prints each failure and a last line naming WHAT; 1 if any, else 0."""
    for f in fails:
        print("FAIL: " + f)
    print(f"{'FAIL' if fails else 'ok'}: {what}")
    return 1 if fails else 0
