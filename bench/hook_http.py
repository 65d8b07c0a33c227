"""Is a guard already running, answering Claude Code's `type: http` hooks, worth it?

    PYTHONPATH=src python bench/hook_http.py [--calls 50] [--warm 200] [--load N]

Claude Code can POST a hook's payload to a URL instead of starting a command. This
times, in the same run, one PostToolUse answered three ways:

- the command hook as `loopwatch install` writes it (a process per call, as today);
- a prototype guard kept running on 127.0.0.1 (this file, `--serve`: one process that
  does for each POST what the command hook does, from payload to answer, against the
  same kind of state), asked over a new connection per call as a host would;
- `python -c pass`, the floor of any command hook.

First on the machine as it is, then beside `--load` busy processes of our own (default:
one per core). Printed: median wall time of each and the guard's resident memory. The
prototype is a measurement, not a feature: it has no token, no lifecycle and no fallback
(what the written decision in BENCHMARKS.md weighs).
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook import SRC, busy, installed_command, logged, payload, timed_cpu, warm  # bench/hook.py


def serve(port_file: str) -> None:
    """The prototype guard: each POST body is one hook payload, answered as `loopwatch hook` would."""
    from loopwatch._hook import settings
    from loopwatch._hook.guard import handle
    from loopwatch._hook.payload import parse
    from loopwatch._hook.state import Store

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            call = parse(data, "claude-code", False, None)
            config_settings, config, _ = settings.load(call.cwd, log=lambda line: None)
            store = Store(
                settings.state_dir(),
                config_settings.busy_timeout,
                config_settings.keep_days,
                config_settings.keep_sessions,
                origin=config_settings.origin,
            )
            try:
                answer = handle(call, config, store)
            finally:
                store.close()
            body = json.dumps(answer.stdout).encode() if answer.stdout is not None else b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def post(port: int, data: bytes) -> float:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/hook", body=data, headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
        if reply.status != 200:
            raise SystemExit(f"the guard answered {reply.status}")
    finally:
        conn.close()
    return time.perf_counter() - start


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_PROFILE="attended")
        command_env = {**env, "LOOPWATCH_STATE_DIR": str(Path(tmp) / "command")}
        guard_env = {**env, "LOOPWATCH_STATE_DIR": str(Path(tmp) / "guard")}
        for state in ("command", "guard"):
            warm(Path(tmp) / state, "bench-session", tmp, args.warm)
        port_file = Path(tmp) / "port"
        guard = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)], env=guard_env)
        try:
            while not port_file.exists() or not port_file.read_text():
                if guard.poll() is not None:
                    raise SystemExit("the guard did not start")
                time.sleep(0.05)
            port = int(port_file.read_text())
            hook = installed_command(sys.executable, env)
            step = args.warm
            for phase, load in (("quiet", 0), ("under load", args.load)):
                if phase == "under load" and load <= 0:
                    break
                loaders = busy(load)
                try:
                    floor, command, http = [], [], []
                    for _ in range(args.calls):
                        data = json.dumps(payload(step, "bench-session", tmp)).encode()
                        step += 1
                        floor.append(timed_cpu([sys.executable, "-c", "pass"], b"", env)[0])
                        command.append(timed_cpu(hook, data, command_env)[0])
                        http.append(post(port, data))
                finally:
                    for proc in loaders:
                        proc.kill()
                        proc.wait()
                base = statistics.median(floor)
                print(f"{phase}: {load} busy processes of ours, load average {os.getloadavg()[0]:.1f}")
                print(f"  python -c pass            median {base * 1000:7.1f} ms")
                for name, times in (("command hook (installed)", command), ("http guard (running)", http)):
                    mid = statistics.median(times)
                    print(f"  {name:25} median {mid * 1000:7.1f} ms  ({mid / base:.2f}x python -c pass)")
            print(f"guard's resident memory after {step} calls: {rss_kib(guard.pid) / 1024:.1f} MiB")
            logged(Path(tmp) / "command")
            logged(Path(tmp) / "guard")
        finally:
            guard.kill()
            guard.wait()


if __name__ == "__main__":
    main()
