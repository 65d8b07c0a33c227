"""A stand-in for an agent stuck retrying: the same request fails, and it retries, forever.

    loopwatch run -- python examples/stuck_agent.py    # ended as a loop: exit status 86
"""

import time

for attempt in range(1, 200):
    print(f"Request failed: connection refused, retrying in 1s (attempt {attempt})", flush=True)
    time.sleep(0.25)
