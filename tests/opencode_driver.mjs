// Runs memoryd's OpenCode plugin as OpenCode does (tests/client/test_opencode_plugin.py): loads the
// plugin file, calls its server with a plugin input, then calls its hooks one after the other
// with the inputs and outputs the steps on stdin give (OpenCode's shapes), and prints, per step,
// the output object after the hook, whether it threw (and what) and how long it took.
//
//   node tests/opencode_driver.mjs PLUGIN.js DIRECTORY < steps.json
// steps: [{"hook": "event" | "tool.execute.before" | …, "input": {…}, "output": {…}}, …]

import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const [plugin, directory] = process.argv.slice(2)
const scratch = mkdtempSync(join(tmpdir(), "memoryd-opencode-"))
const module = join(scratch, "memoryd.mjs") // an ES module whatever package.json is near
copyFileSync(plugin, module)
const loaded = await import(pathToFileURL(module).href)
rmSync(scratch, { recursive: true })
const exported = Object.keys(loaded)
const hooks = await loaded.default.server({ directory, worktree: directory, project: {}, client: {} })
const steps = JSON.parse(readFileSync(0, "utf8"))
const results = []
for (const step of steps) {
  const started = performance.now()
  const result = { hook: step.hook }
  try {
    const hook = hooks[step.hook]
    if (typeof hook !== "function") throw new Error(`no hook ${step.hook}`)
    if (step.hook === "event") await hook(step.input)
    else await hook(step.input, step.output)
    result.output = step.output ?? null
  } catch (error) {
    result.threw = String(error && error.message)
  }
  result.ms = performance.now() - started
  results.push(result)
}
process.stdout.write(JSON.stringify({ exported, id: loaded.default.id, hooks: Object.keys(hooks), results }))
