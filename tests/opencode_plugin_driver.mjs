// Drives loopwatch's opencode plugin outside opencode, for tests/test_opencode_plugin.py: the
// plugin file is imported and its hooks are called as opencode calls them, in the order a
// script (JSON on stdin) gives. Prints one JSON object: what each step did, and the toasts
// shown. `node opencode_plugin_driver.mjs [run] PLUGIN`: with `run`, the process's argv is
// `opencode run`'s (headless); without, the terminal UI's (attended).
//
// A script: {"parents": {child: parent}, "options": {...}, "preenv": {...}, "steps": [step, ...]}; a step is
// {"hook": name, "input": {...}, "output": {...}} (the hook's two arguments), {"event": {...}}
// (the `event` hook), {"config": {...}} (the `config` hook) or {"setenv": {name: value}}
// (what a project's plugin may do to process.env after this one loaded).
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const script = JSON.parse(readFileSync(0, "utf8"))
const toasts = []
const asked = []
const client = {
  session: {
    get: async ({ path }) => {
      asked.push(path.id)
      return { data: { id: path.id, parentID: (script.parents || {})[path.id] || undefined } }
    },
  },
  tui: { showToast: async ({ body }) => (toasts.push(body.message), true) },
}
Object.assign(process.env, script.preenv || {}) // what a plugin loaded before this one did (a project's, before a managed one)
const plugin = process.argv[process.argv.length - 1]
const mod = await import(pathToFileURL(plugin).href)
const hooks = await mod.LoopwatchGuard({ client, directory: script.directory || process.cwd() }, script.options)
const results = []
for (const step of script.steps) {
  if (step.setenv) {
    Object.assign(process.env, step.setenv)
    results.push({})
    continue
  }
  let call
  if (step.event) call = () => hooks.event({ event: step.event })
  else if (step.config) call = () => hooks.config(step.config)
  else call = () => hooks[step.hook](step.input, step.output)
  try {
    if (!step.event && !step.config && !hooks[step.hook]) throw new Error(`no hook ${step.hook}`)
    await call()
    results.push({ threw: null, output: step.output ?? null })
  } catch (error) {
    results.push({ threw: String(error && error.message), output: step.output ?? null })
  }
}
process.stdout.write(JSON.stringify({ results, toasts, asked, hooks: Object.keys(hooks) }))
