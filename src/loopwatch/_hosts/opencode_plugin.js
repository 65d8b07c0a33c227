// loopwatch's live guard for opencode. `loopwatch install opencode` writes this file whole and
// `loopwatch uninstall opencode` removes it: edit loopwatch's settings, not this file.
//
// Around every tool call it runs loopwatch's hook (`python -I -m loopwatch hook opencode EVENT`,
// a JSON payload on stdin, a JSON answer on stdout) and does what the answer says:
//   refuse  -> throw before the call runs: the model reads exactly that text as the call's result;
//   nudge   -> append to what the model reads after the call;
//   stop    -> end the run: every later model request of the session (and of its sub-agents) is
//              refused in `chat.params`, which opencode calls before each request;
//   person  -> tell the person (stderr in `opencode run`, a toast in the terminal UI).
// Anything that goes wrong here (no Python, a crash, a timeout) lets the call through.
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"

// The hook's command line, written by `loopwatch install` (JSON); null in loopwatch's own copy,
// which a managed opencode.json names with the command in its options instead.
const INSTALLED = null // loopwatch: hook command

// The environment opencode was started with. A project's plugin loads after this one and may
// change process.env for the whole process: the hook never sees such a change. On Linux it is
// read from /proc, which nothing in the process can rewrite; elsewhere it is a copy taken now.
function startEnv() {
  try {
    const out = {}
    for (const item of readFileSync("/proc/self/environ", "latin1").split("\0")) {
      const at = item.indexOf("=")
      if (at > 0) out[item.slice(0, at)] = Buffer.from(item.slice(at + 1), "latin1").toString("utf8")
    }
    if (Object.keys(out).length) return out
  } catch {}
  return { ...process.env }
}
const ENV = startEnv()

// `opencode run PROMPT` is headless unless -i/--interactive; so is `opencode github run`. The
// terminal UI runs plugins in a worker whose argv names no command; `serve`, `web` and `acp`
// serve a client someone uses: attended.
const ARGS = process.argv.slice(2)
const WORDS = ARGS.filter((a) => !a.startsWith("-"))
const HEADLESS =
  (WORDS[0] === "run" || (WORDS[0] === "github" && WORDS[1] === "run")) &&
  !ARGS.includes("-i") &&
  !ARGS.includes("--interactive")

const TIMEOUT_MS = 30000 // opencode never times a plugin out: a hook that hangs would hold the call
const KEEP = 4096 // call ids remembered

export const LoopwatchGuard = async ({ client, directory }, options) => {
  const hook = Array.isArray(INSTALLED) ? INSTALLED : options && options.hook
  if (!Array.isArray(hook) || !hook.length || !hook.every((a) => typeof a === "string")) return {}
  const env = { ...ENV, LOOPWATCH_OPENCODE_HEADLESS: HEADLESS ? "1" : "0" }
  const parents = new Map() // session id -> its parent's id, or null for a top-level session
  const stopped = new Map() // top-level session id -> what the person is told of the stop
  const reported = new Set() // call ids already reported (or refused here): never reported again
  const checked = new Map() // call id -> the input checked before it ran (JSON)
  const pending = new Map() // session id -> a nudge for a failure no after-hook could carry
  let toldRewrite = false

  function remember(set, key, value) {
    if (set instanceof Map) set.set(key, value)
    else set.add(key)
    if (set.size > KEEP) set.delete(set.keys().next().value)
  }

  function ask(event, fields) {
    let payload
    try {
      payload = JSON.stringify({ hook_event_name: event, cwd: directory, ...fields })
    } catch {
      return {}
    }
    let done
    try {
      done = spawnSync(hook[0], [...hook.slice(1), event], {
        input: payload,
        encoding: "utf8",
        timeout: TIMEOUT_MS,
        env,
        cwd: directory,
        maxBuffer: 1 << 24,
        windowsHide: true,
      })
    } catch {
      return {}
    }
    if (done.error || done.status !== 0 || !done.stdout) return {}
    try {
      const answer = JSON.parse(done.stdout)
      return answer && typeof answer === "object" ? answer : {}
    } catch {
      return {}
    }
  }

  async function rootOf(id) {
    for (let hops = 0; hops < 16 && id; hops++) {
      if (!parents.has(id)) {
        let parent = null
        try {
          const found = await client.session.get({ path: { id } })
          parent = (found && found.data && found.data.parentID) || null
        } catch {}
        parents.set(id, parent)
      }
      const parent = parents.get(id)
      if (!parent) return id
      id = parent
    }
    return id
  }

  async function who(sessionID) {
    const root = await rootOf(sessionID)
    return { session_id: root, agent_id: root === sessionID ? "" : sessionID }
  }

  function tell(text) {
    if (typeof text !== "string" || !text) return
    if (HEADLESS) {
      try {
        process.stderr.write(text.endsWith("\n") ? text : text + "\n")
      } catch {}
      return
    }
    try {
      Promise.resolve(client.tui.showToast({ body: { message: text, variant: "warning" } })).catch(() => {})
    } catch {}
  }

  function act(answer, root) {
    const stop = typeof answer.stop === "string" && answer.stop ? answer.stop : ""
    if (!(stop && stopped.has(root))) tell(answer.person) // a stop is told once
    if (stop) stopped.set(root, stop)
  }

  function asJson(value) {
    try {
      return JSON.stringify(value)
    } catch {
      return undefined
    }
  }

  return {
    // Project plugins load after this one, so their hooks run after it: they can change what
    // runs after the check, or take a nudge back out. Say so at every start.
    config: async (config) => {
      const origins = (config && config.plugin_origins) || []
      const local = origins.filter((o) => o && o.scope === "local").map((o) => o.spec)
      if (local.length)
        tell(
          "loopwatch: this project loads plugins of its own, which run after loopwatch's guard and can change " +
            "what it checked: " +
            local.join(", "),
        )
    },

    // The person wrote: every streak starts again, a stop is lifted.
    "chat.message": async (input) => {
      const id = await who(input.sessionID)
      if (id.agent_id) return // a sub-agent's task prompt: nobody wrote
      stopped.delete(id.session_id)
      ask("chat.message", id)
    },

    // Called before every model request, a sub-agent's too: the one place that holds a stop.
    "chat.params": async (input) => {
      const root = await rootOf(input.sessionID)
      if (stopped.has(root)) throw new Error(stopped.get(root))
    },

    "tool.execute.before": async (input, output) => {
      const id = await who(input.sessionID)
      const args = output ? output.args : undefined
      const answer = ask("tool.execute.before", {
        ...id,
        tool_name: input.tool,
        tool_use_id: input.callID,
        tool_input: args,
      })
      act(answer, id.session_id)
      if (typeof answer.refuse === "string" && answer.refuse) {
        // A refused call ends as an error part: never report it as a failure of the call.
        remember(reported, input.callID)
        throw new Error(answer.refuse)
      }
      const text = asJson(args)
      if (text !== undefined) remember(checked, input.callID, text)
    },

    "tool.execute.after": async (input, output) => {
      remember(reported, input.callID)
      const id = await who(input.sessionID)
      const before = checked.get(input.callID)
      checked.delete(input.callID)
      const ran = asJson(input.args)
      if (before !== undefined && ran !== undefined && ran !== before && !toldRewrite) {
        toldRewrite = true
        tell(`loopwatch: another plugin changed a ${input.tool} call after loopwatch checked it`)
      }
      const metadata = (output && output.metadata) || {}
      const answer = ask("tool.execute.after", {
        ...id,
        tool_name: input.tool,
        tool_use_id: input.callID,
        // What the model asked for, as checked before it ran (a later plugin may have changed
        // what ran): the calls the guard compares are the model's.
        tool_input: before !== undefined ? JSON.parse(before) : input.args,
        tool_response: {
          output: output ? output.output : undefined,
          exit: typeof metadata.exit === "number" ? metadata.exit : null,
          title: output ? output.title : undefined,
        },
        spawned: input.tool === "task" && typeof metadata.sessionId === "string" ? metadata.sessionId : undefined,
      })
      act(answer, id.session_id)
      const nudges = [pending.get(input.sessionID), answer.nudge].filter((n) => typeof n === "string" && n)
      pending.delete(input.sessionID)
      if (nudges.length && output) output.output = [output.output ?? "", ...nudges].join("\n\n")
    },

    event: async ({ event }) => {
      if (!event || !event.properties) return
      if (event.type === "session.created") {
        const info = event.properties.info
        if (info && info.id) parents.set(info.id, info.parentID || null)
        return
      }
      if (event.type === "session.idle") {
        const id = await who(event.properties.sessionID)
        act(ask("session.idle", id), id.session_id)
        return
      }
      if (event.type !== "message.part.updated") return
      // A tool that fails by throwing (a read of a missing file, an edit that does not apply)
      // gets no tool.execute.after: its error part, seen here, is the only report of it.
      const part = event.properties.part
      if (!part || part.type !== "tool" || !part.state || part.state.status !== "error") return
      if (reported.has(part.callID)) return
      remember(reported, part.callID)
      checked.delete(part.callID)
      if (part.state.metadata && part.state.metadata.interrupted) return // aborted, not failed
      const id = await who(part.sessionID)
      const answer = ask("tool.error", {
        ...id,
        tool_name: part.tool,
        tool_use_id: part.callID,
        tool_input: part.state.input,
        error: part.state.error,
      })
      act(answer, id.session_id)
      // The error is already the model's to read: a nudge goes with the session's next call.
      if (typeof answer.nudge === "string" && answer.nudge) pending.set(part.sessionID, answer.nudge)
    },
  }
}
