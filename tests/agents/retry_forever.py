"""An agent stuck retrying: the same line, with a moving attempt counter, forever."""

import time

from _agent import note_pid, say

note_pid()
say("Connecting to api.example.com\n")
attempt = 1
while True:
    say(f"Request failed (attempt {attempt}): connection refused, retrying in 0.{attempt % 10}s\n")
    attempt += 1
    time.sleep(0.005)
